! Issue 17, item 5: what works from C on Isthmus communicators works from
! Fortran. Registers MPI_COMM_WORLD (2 ranks) as GROUP, forms an Isthmus
! intercommunicator with PEER (this program under the other MPI), and
! checks every value of:
!  1. a persistent halo exchange (MPI_Send_init/MPI_Recv_init with remote
!     rank r) beside a native one on MPI_COMM_WORLD, restarted 40 times:
!     MPI_Start + MPI_Wait/MPI_Test one by one, or one MPI_Startall +
!     MPI_Waitall mixing the native and the Isthmus requests;
!  2. MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init, restarted;
!  3. MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4: MPICH; Open MPI 4.1
!     has neither and makes the blocking calls);
!  4. a persistent MPI_Bcast_init and MPI_Barrier_init (MPI 4: MPICH; Open
!     MPI 4.1 issues MPI_Ibcast/MPI_Ibarrier in the same order);
!  5. the group calls on the merged communicator (MPI_Comm_group,
!     MPI_Group_incl/translate_ranks/compare/rank/size,
!     MPI_Comm_remote_group) and MPI_Comm_create of a group spanning both
!     jobs;
!  6. MPI_Comm_split and MPI_Comm_create of the intercommunicator, and
!     MPI_Intercomm_create with the merged communicator as peer_comm.
! The side whose group name sorts first is side 1. Each stage prints
! "persist rank R: <stage> passed".
!
! -DUSE_MPIF_H: include 'mpif.h'; -DUSE_F08: use mpi_f08 (and the
! isthmus_f08 module); else use mpi. -DHAVE_MPI4: the MPI 4 calls.
#ifdef USE_F08
#define HCOMM type(MPI_Comm)
#define HREQ type(MPI_Request)
#define HGROUP type(MPI_Group)
#define HSTATUS type(MPI_Status)
#define SOURCE_OF(s) s%MPI_SOURCE
#else
#define HCOMM integer
#define HREQ integer
#define HGROUP integer
#define HSTATUS integer, dimension(MPI_STATUS_SIZE)
#define SOURCE_OF(s) s(MPI_SOURCE)
#endif
program persist
#ifdef USE_F08
  use mpi_f08
  use isthmus_f08
#elif !defined(USE_MPIF_H)
  use mpi
#endif
  implicit none
#ifdef USE_MPIF_H
  include 'mpif.h'
#endif
  character(len=64) :: group, peer
  integer :: ierr, rank, side, other, it, i, n, mrank, msize, root, partner, handle
  HCOMM :: inter, merged, sub, split, ic
  HREQ :: halo(4), modes(6), req, coll(2)
  HGROUP :: wg, g2, rg
  HSTATUS :: st
  integer, asynchronous :: sbuf(8), rbuf(8), nsend(2), nrecv(2)
  integer, asynchronous :: s1(4), s2(4), s3(4), r1(4), r2(4), r3(4), cb(3)
  integer :: attach(1024), out(2), expect(2), v, total
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, group)
  call get_command_argument(2, peer)
  side = 2
  if (llt(trim(group), trim(peer))) side = 1
  other = 3 - side
  partner = 1 - rank
  call isthmus_register(trim(group), MPI_COMM_WORLD, handle, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_register')
  call isthmus_intercomm_create_timeout(handle, peer, 120d0, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_intercomm_create_timeout')

  ! 1. The halo exchange: Isthmus requests 1 (send) and 3 (receive),
  ! native ones 2 and 4.
  call MPI_Send_init(sbuf, 8, MPI_INTEGER, rank, 5, inter, halo(1), ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Send_init')
  call MPI_Send_init(nsend, 2, MPI_INTEGER, partner, 5, MPI_COMM_WORLD, halo(2), ierr)
  call MPI_Recv_init(rbuf, 8, MPI_INTEGER, rank, 5, inter, halo(3), ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Recv_init')
  call MPI_Recv_init(nrecv, 2, MPI_INTEGER, partner, 5, MPI_COMM_WORLD, halo(4), ierr)
  do it = 1, 40
    sbuf = (/ (side*100000 + rank*1000 + it*10 + i, i = 1, 8) /)
    nsend = (/ rank, it /)
    rbuf = -1
    nrecv = -1
    if (mod(it, 2) == 0) then
      call MPI_Startall(4, halo, ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_Startall')
      call MPI_Waitall(4, halo, MPI_STATUSES_IGNORE, ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_Waitall')
    else
      call MPI_Start(halo(3), ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_Start (receive)')
      call MPI_Start(halo(4), ierr)
      call MPI_Start(halo(1), ierr)
      call check(ierr == MPI_SUCCESS, 'MPI_Start (send)')
      call MPI_Start(halo(2), ierr)
      call MPI_Wait(halo(1), MPI_STATUS_IGNORE, ierr)
      call MPI_Wait(halo(2), MPI_STATUS_IGNORE, ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Test(halo(3), flag, st, ierr)
        call check(ierr == MPI_SUCCESS, 'MPI_Test')
      end do
      call check(SOURCE_OF(st) == rank, 'MPI_Test: source')
      call MPI_Wait(halo(4), MPI_STATUS_IGNORE, ierr)
    end if
    call check(all(rbuf == (/ (other*100000 + rank*1000 + it*10 + i, i = 1, 8) /)), &
               'halo values from the other job')
    call check(all(nrecv == (/ partner, it /)), 'halo values from this job')
  end do
  do i = 1, 4
    call MPI_Request_free(halo(i), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Request_free')
  end do
  print '(a,i0,a)', 'persist rank ', rank, ': halo passed'

  ! 2. The other modes; the ready send's receive is posted before a
  ! barrier the sends come after.
  ! (An Isthmus buffered send never uses the attached buffer; a portable
  ! program attaches one all the same, and leaves it to MPI_Finalize.)
  call MPI_Buffer_attach(attach, 4096, ierr)
  call MPI_Recv_init(r1, 4, MPI_INTEGER, rank, 6, inter, modes(1), ierr)
  call MPI_Recv_init(r2, 4, MPI_INTEGER, rank, 7, inter, modes(2), ierr)
  call MPI_Recv_init(r3, 4, MPI_INTEGER, rank, 8, inter, modes(3), ierr)
  call MPI_Ssend_init(s1, 4, MPI_INTEGER, rank, 6, inter, modes(4), ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Ssend_init')
  call MPI_Bsend_init(s2, 4, MPI_INTEGER, rank, 7, inter, modes(5), ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Bsend_init')
  call MPI_Rsend_init(s3, 4, MPI_INTEGER, rank, 8, inter, modes(6), ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Rsend_init')
  do it = 1, 10
    s1 = (/ (side*1000 + it*10 + i, i = 1, 4) /)
    s2 = s1 + 100
    s3 = s1 + 200
    r1 = -1
    r2 = -1
    r3 = -1
    call MPI_Startall(3, modes, ierr)
    call MPI_Barrier(inter, ierr)
    call MPI_Startall(3, modes(4:6), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Startall (modes)')
    call MPI_Waitall(6, modes, MPI_STATUSES_IGNORE, ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Waitall (modes)')
    call check(all(r1 == (/ (other*1000 + it*10 + i, i = 1, 4) /)), 'MPI_Ssend_init values')
    call check(all(r2 == r1 + 100), 'MPI_Bsend_init values')
    call check(all(r3 == r1 + 200), 'MPI_Rsend_init values')
  end do
  do i = 1, 6
    call MPI_Request_free(modes(i), ierr)
  end do
  print '(a,i0,a)', 'persist rank ', rank, ': modes passed'

  ! 3. Send and receive in one request.
  s1 = (/ (side*1000 + rank*10 + i, i = 1, 4) /)
  r1 = -1
  r2 = s1 + 500
#ifdef HAVE_MPI4
  call MPI_Isendrecv(s1, 4, MPI_INTEGER, rank, 11, r1, 4, MPI_INTEGER, rank, 11, inter, req, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Isendrecv')
  call MPI_Wait(req, st, ierr)
  call check(ierr == MPI_SUCCESS .and. SOURCE_OF(st) == rank, 'MPI_Isendrecv: wait')
  call MPI_Isendrecv_replace(r2, 4, MPI_INTEGER, rank, 12, rank, 12, inter, req, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Isendrecv_replace')
  call MPI_Wait(req, st, ierr)
#else
  call MPI_Sendrecv(s1, 4, MPI_INTEGER, rank, 11, r1, 4, MPI_INTEGER, rank, 11, inter, st, ierr)
  call MPI_Sendrecv_replace(r2, 4, MPI_INTEGER, rank, 12, rank, 12, inter, st, ierr)
#endif
  call check(all(r1 == (/ (other*1000 + rank*10 + i, i = 1, 4) /)), 'sendrecv values')
  call check(all(r2 == r1 + 500), 'sendrecv_replace values')
  print '(a,i0,a)', 'persist rank ', rank, ': isendrecv passed'

  ! 4. A persistent broadcast from side 1's rank 0, and a barrier.
  root = 0
  if (side == 1) then
    root = MPI_PROC_NULL
    if (rank == 0) root = MPI_ROOT
  end if
#ifdef HAVE_MPI4
  call MPI_Bcast_init(cb, 3, MPI_INTEGER, root, inter, MPI_INFO_NULL, coll(1), ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Bcast_init')
  call MPI_Barrier_init(inter, MPI_INFO_NULL, coll(2), ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Barrier_init')
#endif
  do it = 1, 6
    cb = -1
    if (root == MPI_ROOT) cb = (/ it, 2*it, 3*it /)
#ifdef HAVE_MPI4
    call MPI_Start(coll(1), ierr)
    call check(ierr == MPI_SUCCESS, 'MPI_Start (bcast)')
    call MPI_Wait(coll(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Start(coll(2), ierr)
    call MPI_Wait(coll(2), MPI_STATUS_IGNORE, ierr)
#else
    call MPI_Ibcast(cb, 3, MPI_INTEGER, root, inter, req, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    call MPI_Ibarrier(inter, req, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
#endif
    call check(ierr == MPI_SUCCESS, 'persistent collective: wait')
    if (side == 2) then
      call check(all(cb == (/ it, 2*it, 3*it /)), 'MPI_Bcast_init values')
    else if (rank == 1) then
      call check(all(cb == -1), 'MPI_Bcast_init: MPI_PROC_NULL untouched')
    end if
  end do
#ifdef HAVE_MPI4
  call MPI_Request_free(coll(1), ierr)
  call MPI_Request_free(coll(2), ierr)
#endif
  print '(a,i0,a)', 'persist rank ', rank, ': persistent collective passed'

  ! 5. Groups of the merged communicator: side 1's ranks first.
  call MPI_Intercomm_merge(inter, .false., merged, ierr)
  call MPI_Comm_rank(merged, mrank, ierr)
  call MPI_Comm_size(merged, msize, ierr)
  call check(msize == 4 .and. mrank == rank + 2*(side-1), 'MPI_Intercomm_merge')
  call MPI_Comm_group(merged, wg, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_group')
  call MPI_Group_size(wg, n, ierr)
  call check(n == 4, 'MPI_Group_size of the merged group')
  call MPI_Group_rank(wg, v, ierr)
  call check(v == mrank, 'MPI_Group_rank of the merged group')
  call MPI_Group_compare(wg, wg, v, ierr)
  call check(v == MPI_IDENT, 'MPI_Group_compare (same)')
  call MPI_Group_incl(wg, 2, (/ 0, 3 /), g2, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Group_incl')
  call MPI_Group_size(g2, n, ierr)
  call check(n == 2, 'MPI_Group_size of the subset')
  call MPI_Group_rank(g2, v, ierr)
  expect(1) = MPI_UNDEFINED
  if (mrank == 0) expect(1) = 0
  if (mrank == 3) expect(1) = 1
  call check(v == expect(1), 'MPI_Group_rank of the subset')
  call MPI_Group_translate_ranks(g2, 2, (/ 0, 1 /), wg, out, ierr)
  call check(ierr == MPI_SUCCESS .and. all(out == (/ 0, 3 /)), 'MPI_Group_translate_ranks')
  call MPI_Group_compare(wg, g2, v, ierr)
  call check(v == MPI_UNEQUAL, 'MPI_Group_compare (subset)')
  call MPI_Comm_remote_group(inter, rg, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_remote_group')
  call MPI_Group_size(rg, n, ierr)
  call check(n == 2, 'MPI_Group_size of the remote group')
  call MPI_Group_translate_ranks(rg, 2, (/ 0, 1 /), wg, out, ierr)
  expect = (/ 2, 3 /)
  if (side == 2) expect = (/ 0, 1 /)
  call check(all(out == expect), 'MPI_Group_translate_ranks (remote group)')
  call MPI_Comm_create(merged, g2, sub, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_create (merged, both jobs)')
  if (mrank == 0 .or. mrank == 3) then
    call check(sub /= MPI_COMM_NULL, 'MPI_Comm_create: a member gets a communicator')
    call MPI_Comm_size(sub, n, ierr)
    call MPI_Comm_rank(sub, v, ierr)
    call check(n == 2 .and. v == mrank / 3, 'MPI_Comm_create: size and rank')
    call MPI_Allreduce(mrank, total, 1, MPI_INTEGER, MPI_SUM, sub, ierr)
    call check(ierr == MPI_SUCCESS .and. total == 3, 'MPI_Allreduce on the created communicator')
    call MPI_Comm_free(sub, ierr)
  else
    call check(sub == MPI_COMM_NULL, 'MPI_Comm_create: a non-member gets MPI_COMM_NULL')
  end if
  call MPI_Group_free(g2, ierr)
  call MPI_Group_free(rg, ierr)
  call MPI_Group_free(wg, ierr)
  call check(ierr == MPI_SUCCESS .and. wg == MPI_GROUP_NULL, 'MPI_Group_free')
  print '(a,i0,a)', 'persist rank ', rank, ': groups passed'

  ! 6. A split of the intercommunicator (rank r with remote rank r), and an
  ! intercommunicator between the jobs over the merged peer_comm.
  call MPI_Comm_split(inter, rank, 0, split, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_split (intercommunicator)')
  call MPI_Comm_remote_size(split, n, ierr)
  call check(n == 1, 'MPI_Comm_split: one remote rank')
  total = side*10 + rank
  call MPI_Sendrecv(total, 1, MPI_INTEGER, 0, 13, v, 1, MPI_INTEGER, 0, 13, split, &
                    st, ierr)
  call check(ierr == MPI_SUCCESS .and. v == other*10 + rank, 'MPI_Sendrecv on the split')
  call MPI_Comm_free(split, ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, wg, ierr)
  call MPI_Comm_create(inter, wg, split, ierr)
  call check(ierr == MPI_SUCCESS .and. split /= MPI_COMM_NULL, 'MPI_Comm_create (intercommunicator)')
  call MPI_Comm_remote_size(split, n, ierr)
  call check(n == 2, 'MPI_Comm_create: remote size')
  call MPI_Comm_free(split, ierr)
  call MPI_Group_free(wg, ierr)
  root = 2
  if (side == 2) root = 0
  call MPI_Intercomm_create(MPI_COMM_WORLD, 0, merged, root, 99, ic, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Intercomm_create (merged peer_comm)')
  call MPI_Comm_remote_size(ic, n, ierr)
  call check(n == 2, 'MPI_Intercomm_create: remote size')
  call MPI_Sendrecv(total, 1, MPI_INTEGER, rank, 14, v, 1, MPI_INTEGER, rank, 14, ic, &
                    st, ierr)
  call check(ierr == MPI_SUCCESS .and. v == other*10 + rank, 'MPI_Sendrecv on the new intercommunicator')
  call MPI_Comm_free(ic, ierr)
  call MPI_Comm_free(merged, ierr)
  print '(a,i0,a)', 'persist rank ', rank, ': split and intercomm_create passed'

  call MPI_Comm_free(inter, ierr)
  call isthmus_leave(handle, ierr)
  print '(a,i0,a)', 'persist rank ', rank, ': all checks passed'
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (.not. ok) then
      print '(a,i0,3a,i0)', 'persist rank ', rank, ': FAILED: ', what, ' ierr=', ierr
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine check
end program persist
