/*
 * Every predefined datatype across the bridge, at its extreme values:
 *   datatypes GROUP PEER
 * Both jobs (one rank each) register GROUP and form the intercommunicator
 * with PEER. The job whose name sorts first sends every case, then the
 * other does; so one run checks both directions of a pairing.
 *
 * Per case the sender sends the data (tag = case) and then one int saying
 * whether that send succeeded (tag = 1000 + case), so a refused send never
 * leaves the receiver waiting. The receiver (MPI_ERRORS_RETURN) receives
 * with room for a few elements more than sent and prints one line:
 *   RESULT <sender impl> <receiver impl> <case> OK
 *   RESULT ... <case> WRONG <what>       a wrong value or MPI_Get_count
 *   RESULT ... <case> REFUSED <message>  the receive (or send) failed
 * Cases marked "must refuse" (type mismatch, truncation) print OK when the
 * receive fails and WRONG when it delivers. Only the bytes that hold the
 * value are compared (long double's padding, a pair type's gap are not).
 */
#include <complex.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "check.h"
#include "isthmus.h"

static int rank;
static MPI_Comm inter;

enum { MAXV = 8, REPS = 2, EXTRA = 3, MAXR = 8 };

/* A byte range of one element that holds a value. */
struct range {
    int off, len;
};

struct tcase {
    const char *name;
    MPI_Datatype send_type, recv_type;
    int send_count, recv_count; /* recv_count: the receive's capacity */
    int elem;                   /* bytes between elements in the C array */
    int nvals;                  /* values in `vals`, repeated REPS times */
    const void *vals;
    struct range sig[MAXR]; /* significant bytes; len 0 ends */
    int expect_count;       /* MPI_Get_count(recv_type) */
    int must_refuse;
    int derived; /* sends from ints30 (vector/contiguous cases) */
    int packed;  /* 1: received as MPI_PACKED and unpacked; 2: sent MPI_Pack-ed */
};

static struct tcase cases[128];
static int ncases;

static struct tcase *add(const char *name, MPI_Datatype dt, int elem, int nvals, const void *vals)
{
    struct tcase *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->send_type = c->recv_type = dt;
    c->elem = elem;
    c->nvals = nvals;
    c->vals = vals;
    c->send_count = nvals * REPS;
    c->recv_count = c->send_count + EXTRA;
    c->expect_count = c->send_count;
    c->sig[0] = (struct range){0, elem};
    return c;
}

#define SCALAR(dt, T, ...)                                                            \
    do {                                                                              \
        static const T v[] = {__VA_ARGS__};                                           \
        add(#dt, dt, sizeof(T), sizeof v / sizeof v[0], v);                           \
    } while (0)

/* x87 long double holds its value in 10 of its bytes. */
#define LD_BYTES (LDBL_MANT_DIG == 64 ? 10 : (int) sizeof(long double))

static float fbits(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static double dbits(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static float fv[MAXV];
static double dv[MAXV];
static long double ldv[MAXV];
static float complex fcv[MAXV];
static double complex dcv[MAXV];
static long double complex ldcv[MAXV];

struct float_int { float a; int b; };
struct double_int { double a; int b; };
struct long_int { long a; int b; };
struct two_int { int a; int b; };
struct short_int { short a; int b; };
struct long_double_int { long double a; int b; };

static void build_cases(void)
{
    /* Floating values: extremes, denormals, infinities, a NaN with payload, -0. */
    float f[] = {FLT_MAX, -FLT_MAX, FLT_MIN, fbits(1), INFINITY, -INFINITY,
                 fbits(0x7fc12345u), -0.0f};
    double d[] = {DBL_MAX, -DBL_MAX, DBL_MIN, dbits(1), INFINITY, -INFINITY,
                  dbits(0x7ff8000012345678ull), -0.0};
    /* 1e4000L and LDBL_MAX do not fit a double; LDBL_TRUE_MIN neither. */
    long double ld[] = {LDBL_MAX, -LDBL_MAX, LDBL_MIN, 1e4000L, -1e-4000L, INFINITY,
                        1.0L + LDBL_EPSILON, -0.0L};
    memcpy(fv, f, sizeof f);
    memcpy(dv, d, sizeof d);
    memcpy(ldv, ld, sizeof ld);
    for (int i = 0; i < MAXV; i++) {
        fcv[i] = f[i] + f[MAXV - 1 - i] * I;
        dcv[i] = d[i] + d[MAXV - 1 - i] * I;
        ldcv[i] = ld[i] + ld[MAXV - 1 - i] * I;
    }

    SCALAR(MPI_CHAR, char, CHAR_MIN, CHAR_MAX, 0, 'a', '\n');
    SCALAR(MPI_SIGNED_CHAR, signed char, SCHAR_MIN, SCHAR_MAX, 0, -1);
    SCALAR(MPI_UNSIGNED_CHAR, unsigned char, 0, UCHAR_MAX, 1, 0x80);
    SCALAR(MPI_BYTE, unsigned char, 0, 0xff, 0x5a, 0x80);
    SCALAR(MPI_WCHAR, wchar_t, WCHAR_MIN, WCHAR_MAX, 0, L'\u20ac');
    SCALAR(MPI_SHORT, short, SHRT_MIN, SHRT_MAX, 0, -1);
    SCALAR(MPI_UNSIGNED_SHORT, unsigned short, 0, USHRT_MAX, 1, 0x8000);
    SCALAR(MPI_INT, int, INT_MIN, INT_MAX, 0, -1);
    SCALAR(MPI_UNSIGNED, unsigned, 0, UINT_MAX, 1, 0x80000000u);
    SCALAR(MPI_LONG, long, LONG_MIN, LONG_MAX, 12345678900L, -1);
    SCALAR(MPI_UNSIGNED_LONG, unsigned long, 0, ULONG_MAX, 12345678900UL, 1);
    SCALAR(MPI_LONG_LONG_INT, long long, LLONG_MIN, LLONG_MAX, 0, -1);
    SCALAR(MPI_LONG_LONG, long long, LLONG_MIN, LLONG_MAX, 12345678900LL, 1);
    SCALAR(MPI_UNSIGNED_LONG_LONG, unsigned long long, 0, ULLONG_MAX, 1, 1ULL << 63);
    add("MPI_FLOAT", MPI_FLOAT, sizeof(float), MAXV, fv);
    add("MPI_DOUBLE", MPI_DOUBLE, sizeof(double), MAXV, dv);
    add("MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, sizeof(long double), MAXV, ldv)->sig[0].len =
        LD_BYTES;
    SCALAR(MPI_INT8_T, int8_t, INT8_MIN, INT8_MAX, 0, -1);
    SCALAR(MPI_INT16_T, int16_t, INT16_MIN, INT16_MAX, 0, -1);
    SCALAR(MPI_INT32_T, int32_t, INT32_MIN, INT32_MAX, 0, -1);
    SCALAR(MPI_INT64_T, int64_t, INT64_MIN, INT64_MAX, 0, -1);
    SCALAR(MPI_UINT8_T, uint8_t, 0, UINT8_MAX, 1);
    SCALAR(MPI_UINT16_T, uint16_t, 0, UINT16_MAX, 1);
    SCALAR(MPI_UINT32_T, uint32_t, 0, UINT32_MAX, 1);
    SCALAR(MPI_UINT64_T, uint64_t, 0, UINT64_MAX, 1);
    SCALAR(MPI_C_BOOL, bool, true, false, true);
    add("MPI_C_COMPLEX", MPI_C_COMPLEX, sizeof(float complex), MAXV, fcv);
    add("MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, sizeof(float complex), MAXV, fcv);
    add("MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, sizeof(double complex), MAXV, dcv);
    struct tcase *c = add("MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX,
                          sizeof(long double complex), MAXV, ldcv);
    c->sig[0] = (struct range){0, LD_BYTES};
    c->sig[1] = (struct range){sizeof(long double), LD_BYTES};
    SCALAR(MPI_AINT, MPI_Aint, (MPI_Aint) LONG_MIN, (MPI_Aint) LONG_MAX, 0, -1);
    SCALAR(MPI_OFFSET, MPI_Offset, (MPI_Offset) LLONG_MIN, (MPI_Offset) LLONG_MAX, 0, -1);
    SCALAR(MPI_COUNT, MPI_Count, (MPI_Count) LLONG_MIN, (MPI_Count) LLONG_MAX, 0, -1);
    SCALAR(MPI_PACKED, unsigned char, 0, 0xff, 0x11, 0x80);
    /* The C++ types have the C types' layouts. */
    SCALAR(MPI_CXX_BOOL, bool, true, false, true);
    add("MPI_CXX_FLOAT_COMPLEX", MPI_CXX_FLOAT_COMPLEX, sizeof(float complex), MAXV, fcv);
    add("MPI_CXX_DOUBLE_COMPLEX", MPI_CXX_DOUBLE_COMPLEX, sizeof(double complex), MAXV, dcv);
    c = add("MPI_CXX_LONG_DOUBLE_COMPLEX", MPI_CXX_LONG_DOUBLE_COMPLEX,
            sizeof(long double complex), MAXV, ldcv);
    c->sig[0] = (struct range){0, LD_BYTES};
    c->sig[1] = (struct range){sizeof(long double), LD_BYTES};

    /* The pair types (for MINLOC/MAXLOC), gaps between their fields. */
#define PAIR(dt, T, A, B)                                                                  \
    do {                                                                                   \
        static const T v[] = {A, B};                                                       \
        struct tcase *p = add(#dt, dt, sizeof(T), 2, v);                                   \
        p->sig[0] = (struct range){0, sizeof(v[0].a)};                                     \
        p->sig[1] = (struct range){offsetof(T, b), sizeof(int)};                           \
    } while (0)
    PAIR(MPI_FLOAT_INT, struct float_int, ((struct float_int){FLT_MAX, INT_MIN}),
         ((struct float_int){-INFINITY, INT_MAX}));
    PAIR(MPI_DOUBLE_INT, struct double_int, ((struct double_int){-DBL_MAX, INT_MIN}),
         ((struct double_int){DBL_MIN, INT_MAX}));
    PAIR(MPI_LONG_INT, struct long_int, ((struct long_int){LONG_MIN, INT_MAX}),
         ((struct long_int){12345678900L, -1}));
    PAIR(MPI_2INT, struct two_int, ((struct two_int){INT_MIN, INT_MAX}),
         ((struct two_int){-1, 0}));
    PAIR(MPI_SHORT_INT, struct short_int, ((struct short_int){SHRT_MIN, INT_MAX}),
         ((struct short_int){SHRT_MAX, INT_MIN}));
    {
        static struct long_double_int v[2];
        v[0].a = 1e4000L, v[0].b = INT_MIN, v[1].a = -LDBL_MAX, v[1].b = INT_MAX;
        struct tcase *p = add("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, sizeof v[0], 2, v);
        p->sig[0] = (struct range){0, LD_BYTES};
        p->sig[1] = (struct range){offsetof(struct long_double_int, b), sizeof(int)};
    }

    /* The Fortran types, from C: INTEGER is an int, LOGICAL an int, REAL a
     * float, COMPLEX two of them, CHARACTER a char. */
    SCALAR(MPI_INTEGER, int, INT_MIN, INT_MAX, 0, -1);
    SCALAR(MPI_LOGICAL, int, 1, 0, 1);
    add("MPI_REAL", MPI_REAL, sizeof(float), MAXV, fv);
    add("MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, sizeof(double), MAXV, dv);
    add("MPI_COMPLEX", MPI_COMPLEX, sizeof(float complex), MAXV, fcv);
    add("MPI_DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX, sizeof(double complex), MAXV, dcv);
    SCALAR(MPI_CHARACTER, char, 'A', 'z', ' ', 0x7f);
    SCALAR(MPI_INTEGER1, int8_t, INT8_MIN, INT8_MAX, 0);
    SCALAR(MPI_INTEGER2, int16_t, INT16_MIN, INT16_MAX, 0);
    SCALAR(MPI_INTEGER4, int32_t, INT32_MIN, INT32_MAX, 0);
    SCALAR(MPI_INTEGER8, int64_t, INT64_MIN, INT64_MAX, 0);
    add("MPI_REAL4", MPI_REAL4, sizeof(float), MAXV, fv);
    add("MPI_REAL8", MPI_REAL8, sizeof(double), MAXV, dv);
    add("MPI_COMPLEX8", MPI_COMPLEX8, sizeof(float complex), MAXV, fcv);
    add("MPI_COMPLEX16", MPI_COMPLEX16, sizeof(double complex), MAXV, dcv);
    {
        static const int v[] = {INT_MIN, INT_MAX, -1, 0};
        struct tcase *p = add("MPI_2INTEGER", MPI_2INTEGER, 2 * sizeof(int), 2, v);
        p->expect_count = p->send_count;
    }
    add("MPI_2REAL", MPI_2REAL, 2 * sizeof(float), MAXV / 2, fv);
    add("MPI_2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION, 2 * sizeof(double), MAXV / 2, dv);
}

/* Derived types: type matching by basic-type sequence (MPI 4.0 §3.3.1). */
static MPI_Datatype vec10, two_ints, mixed;

/* A struct of differently sized basics with gaps between them. */
struct mix {
    char c;
    long double ld;
    long l;
    short s;
    wchar_t w;
    double complex z;
};
static int ints30[30];

static void build_derived(void)
{
    MPI_Type_vector(10, 1, 3, MPI_INT, &vec10);
    MPI_Type_commit(&vec10);
    MPI_Type_contiguous(2, MPI_INT, &two_ints);
    MPI_Type_commit(&two_ints);
    for (int i = 0; i < 30; i++)
        ints30[i] = i % 3 ? -7 : (i % 2 ? INT_MIN + i : INT_MAX - i);
    /* vector(10,1,3,MPI_INT) x1 received as 10 MPI_INT (and back). */
    struct tcase *c = add("vector-as-10-int", vec10, 3 * sizeof(int), 1, ints30);
    c->recv_type = MPI_INT;
    c->send_count = 1;
    c->recv_count = 13;
    c->expect_count = 10;
    c->sig[0] = (struct range){0, sizeof(int)};
    c = add("10-int-as-vector", MPI_INT, sizeof(int), 1, ints30);
    c->recv_type = vec10;
    c->send_count = 10;
    c->recv_count = 2;
    c->expect_count = 1;
    /* 6 ints received as 3 contiguous(2, MPI_INT), and back. */
    c = add("6-int-as-3-pairs", MPI_INT, sizeof(int), 6, ints30);
    c->recv_type = two_ints, c->send_count = 6, c->recv_count = 4, c->expect_count = 3;
    c = add("3-pairs-as-6-int", two_ints, 2 * sizeof(int), 3, ints30);
    c->recv_type = MPI_INT, c->send_count = 3, c->recv_count = 8, c->expect_count = 6;
    /* What MPI forbids must be refused, not delivered. */
    c = add("must-refuse:int-as-float", MPI_INT, sizeof(int), 4, ints30);
    c->recv_type = MPI_FLOAT, c->must_refuse = 1;
    /* A message that ends inside a receive element (MPI allows it:
     * MPICH's datatype/getpartelm.c): the whole ints arrive, MPI_Get_count
     * says MPI_UNDEFINED. */
    c = add("5-int-as-2.5-pairs", MPI_INT, sizeof(int), 5, ints30);
    c->recv_type = two_ints, c->send_count = 5, c->recv_count = 4,
    c->expect_count = MPI_UNDEFINED;
    c = add("must-refuse:long-as-int", MPI_LONG, sizeof(int), 4, ints30);
    c->recv_type = MPI_INT, c->send_count = 2, c->recv_count = 8, c->must_refuse = 1;
    /* The struct, three of them, sent and received as themselves. */
    static struct mix mv[2];
    mv[0] = (struct mix){CHAR_MIN, 1e4000L, LONG_MIN, SHRT_MAX, WCHAR_MAX, DBL_MAX - DBL_MIN * I};
    mv[1] = (struct mix){CHAR_MAX, -LDBL_MIN, 12345678900L, SHRT_MIN, WCHAR_MIN, -0.0 + INFINITY * I};
    int bl[6] = {1, 1, 1, 1, 1, 1};
    MPI_Aint disp[6] = {offsetof(struct mix, c), offsetof(struct mix, ld), offsetof(struct mix, l),
                        offsetof(struct mix, s), offsetof(struct mix, w), offsetof(struct mix, z)};
    MPI_Datatype ty[6] = {MPI_CHAR, MPI_LONG_DOUBLE, MPI_LONG, MPI_SHORT, MPI_WCHAR,
                          MPI_C_DOUBLE_COMPLEX};
    MPI_Datatype raw;
    MPI_Type_create_struct(6, bl, disp, ty, &raw);
    MPI_Type_create_resized(raw, 0, sizeof(struct mix), &mixed);
    MPI_Type_free(&raw);
    MPI_Type_commit(&mixed);
    c = add("struct{char,long-double,long,short,wchar,complex}", mixed, sizeof(struct mix), 2, mv);
    int len[6] = {1, LD_BYTES, sizeof(long), sizeof(short), sizeof(wchar_t), sizeof(double complex)};
    for (int f = 0; f < 6; f++)
        c->sig[f] = (struct range){disp[f], len[f]};
    /* contiguous(3, struct {int; double}) received as such structs. */
    static struct idp {
        int i;
        double d;
    } iv[6] = {{INT_MIN, DBL_MAX}, {INT_MAX, -0.0}, {-1, DBL_MIN}, {0, -DBL_MAX}, {1, 1.5}, {2, 2.5}};
    MPI_Datatype one, three;
    int bl2[2] = {1, 1};
    MPI_Aint d2[2] = {offsetof(struct idp, i), offsetof(struct idp, d)};
    MPI_Datatype t2[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl2, d2, t2, &raw);
    MPI_Type_create_resized(raw, 0, sizeof(struct idp), &one);
    MPI_Type_free(&raw);
    MPI_Type_contiguous(3, one, &three);
    MPI_Type_commit(&one);
    MPI_Type_commit(&three);
    c = add("3-structs-in-one-as-structs", three, 3 * sizeof(struct idp), 2, iv);
    c->recv_type = one, c->recv_count = 3 * c->send_count + EXTRA;
    c->expect_count = 3 * c->send_count;
    for (int f = 0; f < 6; f++)
        c->sig[f] = (struct range){(f / 2) * sizeof(struct idp) + d2[f % 2], f % 2 ? 8 : 4};
    /* MPI_PACKED as MPI says: any message received as MPI_PACKED then
     * MPI_Unpack-ed; MPI_Pack-ed data sent as MPI_PACKED received as the
     * type it holds. */
    c = add("6-int-as-MPI_PACKED", MPI_INT, sizeof(int), 6, ints30);
    c->recv_type = MPI_PACKED, c->send_count = 6, c->recv_count = 64, c->expect_count = 24;
    c->packed = 1;
    c = add("MPI_PACKED-as-structs", mixed, sizeof(struct mix), 2, mv);
    for (int f = 0; f < 6; f++)
        c->sig[f] = (struct range){disp[f], len[f]};
    c->packed = 2;
    for (int k = 0; k < ncases; k++)
        cases[k].derived = cases[k].vals == ints30;
}

/* The value the sender's element `i` holds, laid out as the sender sends it. */
static void fill(const struct tcase *c, unsigned char *buf)
{
    int n = c->nvals * REPS;
    for (int i = 0; i < n; i++)
        memcpy(buf + (size_t) i * c->elem, (const unsigned char *) c->vals + (i % c->nvals) * c->elem,
               c->elem);
}

static const char *impl_name(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(v, &len);
    return strstr(v, "Open MPI") ? "openmpi" : "mpich";
}

static unsigned char sendbuf[1 << 14], recvbuf[1 << 14], want[1 << 14];

static void send_all(void)
{
    for (int k = 0; k < ncases; k++) {
        struct tcase *c = &cases[k];
        memset(sendbuf, 0xee, sizeof sendbuf);
        if (c->derived)
            memcpy(sendbuf, ints30, sizeof ints30);
        else
            fill(c, sendbuf);
        int rc;
        if (c->packed == 2) {
            static unsigned char packbuf[1 << 14];
            int pos = 0;
            MPI_Pack(sendbuf, c->send_count, c->send_type, packbuf, sizeof packbuf, &pos,
                     MPI_COMM_WORLD);
            rc = MPI_Send(packbuf, pos, MPI_PACKED, 0, k, inter);
        } else
            rc = MPI_Send(sendbuf, c->send_count, c->send_type, 0, k, inter);
        int sent = rc == MPI_SUCCESS;
        if (!sent) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            printf("SEND-REFUSED %s %s\n", c->name, msg);
        }
        MPI_Send(&sent, 1, MPI_INT, 0, 1000 + k, inter);
    }
}

/* What the receiver must find: the sent values, placed by the receive type. */
static size_t expected(const struct tcase *c)
{
    if (c->packed == 1) {
        memcpy(want, ints30, 6 * sizeof(int));
        return 6 * sizeof(int);
    }
    if (c->recv_type == vec10) {
        memset(want, 0xa5, sizeof want);
        for (int i = 0; i < 10; i++)
            memcpy(want + 12 * i, &ints30[i], 4);
        return 30 * sizeof(int);
    }
    if (c->send_type == vec10) {
        for (int i = 0; i < 10; i++)
            memcpy(want + 4 * i, &ints30[3 * i], 4);
        return 10 * sizeof(int);
    }
    if (c->send_type == two_ints || c->recv_type == two_ints) {
        int n = c->send_type == two_ints ? 2 * c->send_count : c->send_count;
        memcpy(want, ints30, n * sizeof(int));
        return n * sizeof(int);
    }
    fill(c, want);
    return (size_t) c->send_count * c->elem;
}

static int compare(const struct tcase *c, size_t len, char *what, size_t wlen)
{
    if (c->derived) {
        for (size_t i = 0; i < len; i += 4) {
            if (c->recv_type == vec10 && (i / 4) % 3)
                continue;
            if (memcmp(recvbuf + i, want + i, 4)) {
                snprintf(what, wlen, "int at byte %zu", i);
                return 0;
            }
        }
        return 1;
    }
    for (size_t e = 0; e * c->elem < len; e++)
        for (int r = 0; r < MAXR && c->sig[r].len; r++) {
            size_t o = e * c->elem + c->sig[r].off;
            if (memcmp(recvbuf + o, want + o, c->sig[r].len)) {
                int n = snprintf(what, wlen, "element %zu bytes [%d,+%d): got", e, c->sig[r].off,
                                 c->sig[r].len);
                for (int b = 0; b < c->sig[r].len && n < (int) wlen - 8; b++)
                    n += snprintf(what + n, wlen - n, " %02x", recvbuf[o + b]);
                n += snprintf(what + n, wlen - n, " want");
                for (int b = 0; b < c->sig[r].len && n < (int) wlen - 4; b++)
                    n += snprintf(what + n, wlen - n, " %02x", want[o + b]);
                return 0;
            }
        }
    return 1;
}

static int recv_all(const char *from, const char *me)
{
    int bad = 0;
    for (int k = 0; k < ncases; k++) {
        struct tcase *c = &cases[k];
        int sent = 0;
        MPI_Recv(&sent, 1, MPI_INT, 0, 1000 + k, inter, MPI_STATUS_IGNORE);
        char what[512] = "";
        const char *verdict;
        if (!sent) {
            verdict = c->must_refuse ? "OK" : "REFUSED";
            snprintf(what, sizeof what, "(the send failed)");
        } else {
            MPI_Status st;
            memset(recvbuf, 0xa5, sizeof recvbuf);
            int rc = MPI_Recv(recvbuf, c->recv_count, c->recv_type, 0, k, inter, &st);
            if (rc != MPI_SUCCESS) {
                int len = 0;
                MPI_Error_string(rc, what, &len);
                verdict = c->must_refuse ? "OK" : "REFUSED";
            } else if (c->must_refuse) {
                verdict = "WRONG";
                snprintf(what, sizeof what, "delivered although MPI's type matching forbids it");
            } else {
                int count = -1;
                MPI_Get_count(&st, c->recv_type, &count);
                size_t len = expected(c);
                if (c->packed == 1 && count > 0) {
                    static unsigned char unpacked[1 << 14];
                    int pos = 0;
                    MPI_Unpack(recvbuf, count, &pos, unpacked, 6, MPI_INT, MPI_COMM_WORLD);
                    memcpy(recvbuf, unpacked, 6 * sizeof(int));
                }
                if (count != c->expect_count) {
                    verdict = "WRONG";
                    snprintf(what, sizeof what, "MPI_Get_count %d, want %d", count,
                             c->expect_count);
                } else
                    verdict = compare(c, len, what, sizeof what) ? "OK" : "WRONG";
            }
        }
        bad += strcmp(verdict, "OK") != 0;
        printf("RESULT %s %s %s %s %s\n", from, me, c->name, verdict, what);
        fflush(stdout);
    }
    return bad;
}

int main(int argc, char **argv)
{
    int handle, rc;
    MPI_Init(&argc, &argv);
    CHECK(argc == 3, "usage: datatypes GROUP PEER");
    const char *group = argv[1], *peer = argv[2];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int first = strcmp(group, peer) < 0;
    rc = Isthmus_Register(group, MPI_COMM_WORLD, &handle);
    CHECK(rc == MPI_SUCCESS, "register");
    rc = Isthmus_Intercomm_create_timeout(handle, peer, 120.0, &inter);
    CHECK(rc == MPI_SUCCESS, "intercomm create");
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    build_cases();
    build_derived();
    /* Each side tells the other its implementation. */
    char mine[16], theirs[16] = "";
    snprintf(mine, sizeof mine, "%s", impl_name());
    MPI_Sendrecv(mine, 16, MPI_CHAR, 0, 2000, theirs, 16, MPI_CHAR, 0, 2000, inter,
                 MPI_STATUS_IGNORE);
    int bad;
    if (first) {
        send_all();
        bad = recv_all(theirs, mine);
    } else {
        bad = recv_all(theirs, mine);
        send_all();
    }
    printf("CASES %d BAD %d\n", ncases, bad);
    if (!bad)
        printf("PASS datatypes rank %d\n", rank);
    fflush(stdout);
    MPI_Comm_free(&inter);
    CHECK(Isthmus_Leave(handle) == MPI_SUCCESS, "leave");
    MPI_Finalize();
    return 0;
}
