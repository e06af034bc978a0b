! The Fortran predefined datatypes across an Isthmus intercommunicator, at
! their extreme values (`use mpi`):  datatypes GROUP PEER
! One rank per job. The side whose group name sorts first sends every
! type, then receives every type back from the other side (which does the
! reverse). Each received array is compared bit for bit with what was
! sent, and its MPI_Get_count checked; a mismatch prints "WRONG <type>",
! success "PASS fortran-datatypes".
program datatypes
  use mpi
  use, intrinsic :: ieee_arithmetic
  implicit none
  integer, parameter :: n = 6
  character(len=64) :: group, peer
  integer :: ierr, handle, inter, bad, side
  integer :: i4(n), gi4(n)
  integer(kind=1) :: i1(n), gi1(n)
  integer(kind=2) :: i2(n), gi2(n)
  integer(kind=8) :: i8(n), gi8(n)
  real :: r4(n), gr4(n)
  double precision :: r8(n), gr8(n)
  complex :: c4(n), gc4(n)
  double complex :: c8(n), gc8(n)
  logical :: l(n), gl(n)
  character(len=n) :: ch, gch

  call MPI_Init(ierr)
  call get_command_argument(1, group)
  call get_command_argument(2, peer)
  side = 2
  if (llt(group, peer)) side = 1
  call isthmus_register(group, MPI_COMM_WORLD, handle, ierr)
  call isthmus_intercomm_create_timeout(handle, peer, 120d0, inter, ierr)
  if (ierr /= MPI_SUCCESS) stop 'intercomm'

  i4 = [-huge(0) - 1, huge(0), 0, -1, 1, 12345]
  i1 = [-huge(0_1) - 1_1, huge(0_1), 0_1, -1_1, 1_1, 7_1]
  i2 = [-huge(0_2) - 1_2, huge(0_2), 0_2, -1_2, 1_2, 7_2]
  i8 = [-huge(0_8) - 1_8, huge(0_8), 0_8, -1_8, 12345678900_8, 7_8]
  r4 = [huge(0.0), -huge(0.0), tiny(0.0), ieee_value(0.0, ieee_positive_inf), &
        ieee_value(0.0, ieee_negative_inf), -0.0]
  r4(3) = r4(3) / 4.0 ! a denormal
  r8 = [huge(0d0), -huge(0d0), tiny(0d0) / 8d0, ieee_value(0d0, ieee_positive_inf), &
        ieee_value(0d0, ieee_quiet_nan), -0d0]
  c4 = cmplx(r4, r4(n:1:-1))
  c8 = cmplx(r8, r8(n:1:-1), kind=8)
  l = [.true., .false., .true., .true., .false., .false.]
  ch = 'Az ~#'//achar(127)

  bad = 0
  if (side == 1) then
    call send_all()
    call recv_all()
  else
    call recv_all()
    call send_all()
  end if
  if (bad == 0) print '(a)', 'PASS fortran-datatypes'
  call MPI_Comm_free(inter, ierr)
  call isthmus_leave(handle, ierr)
  call MPI_Finalize(ierr)

contains

  subroutine send_all()
    call MPI_Send(i4, n, MPI_INTEGER, 0, 1, inter, ierr)
    call MPI_Send(i1, n, MPI_INTEGER1, 0, 2, inter, ierr)
    call MPI_Send(i2, n, MPI_INTEGER2, 0, 3, inter, ierr)
    call MPI_Send(i8, n, MPI_INTEGER8, 0, 4, inter, ierr)
    call MPI_Send(r4, n, MPI_REAL, 0, 5, inter, ierr)
    call MPI_Send(r8, n, MPI_DOUBLE_PRECISION, 0, 6, inter, ierr)
    call MPI_Send(c4, n, MPI_COMPLEX, 0, 7, inter, ierr)
    call MPI_Send(c8, n, MPI_DOUBLE_COMPLEX, 0, 8, inter, ierr)
    call MPI_Send(l, n, MPI_LOGICAL, 0, 9, inter, ierr)
    call MPI_Send(ch, n, MPI_CHARACTER, 0, 10, inter, ierr)
    call MPI_Send(r4, n, MPI_REAL4, 0, 11, inter, ierr)
    call MPI_Send(r8, n, MPI_REAL8, 0, 12, inter, ierr)
    call MPI_Send(i4, n / 2, MPI_2INTEGER, 0, 13, inter, ierr) ! pairs of two
  end subroutine

  subroutine counted(what, dt, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: dt, want
    integer :: st(MPI_STATUS_SIZE), got, tag
    tag = 0
    select case (what)
    case ('MPI_INTEGER'); tag = 1
    case ('MPI_INTEGER1'); tag = 2
    case ('MPI_INTEGER2'); tag = 3
    case ('MPI_INTEGER8'); tag = 4
    case ('MPI_REAL'); tag = 5
    case ('MPI_DOUBLE_PRECISION'); tag = 6
    case ('MPI_COMPLEX'); tag = 7
    case ('MPI_DOUBLE_COMPLEX'); tag = 8
    case ('MPI_LOGICAL'); tag = 9
    case ('MPI_CHARACTER'); tag = 10
    case ('MPI_REAL4'); tag = 11
    case ('MPI_REAL8'); tag = 12
    case ('MPI_2INTEGER'); tag = 13
    end select
    call MPI_Probe(0, tag, inter, st, ierr)
    call MPI_Get_count(st, dt, got, ierr)
    if (got /= want) call wrong(what//' (MPI_Get_count of the probe)')
  end subroutine

  subroutine wrong(what)
    character(len=*), intent(in) :: what
    print '(2a)', 'WRONG ', what
    bad = bad + 1
  end subroutine

  subroutine recv_all()
    integer :: st(MPI_STATUS_SIZE)
    call counted('MPI_INTEGER', MPI_INTEGER, n)
    call MPI_Recv(gi4, n, MPI_INTEGER, 0, 1, inter, st, ierr)
    if (any(gi4 /= i4)) call wrong('MPI_INTEGER')
    call counted('MPI_INTEGER1', MPI_INTEGER1, n)
    call MPI_Recv(gi1, n, MPI_INTEGER1, 0, 2, inter, st, ierr)
    if (any(gi1 /= i1)) call wrong('MPI_INTEGER1')
    call counted('MPI_INTEGER2', MPI_INTEGER2, n)
    call MPI_Recv(gi2, n, MPI_INTEGER2, 0, 3, inter, st, ierr)
    if (any(gi2 /= i2)) call wrong('MPI_INTEGER2')
    call counted('MPI_INTEGER8', MPI_INTEGER8, n)
    call MPI_Recv(gi8, n, MPI_INTEGER8, 0, 4, inter, st, ierr)
    if (any(gi8 /= i8)) call wrong('MPI_INTEGER8')
    call counted('MPI_REAL', MPI_REAL, n)
    call MPI_Recv(gr4, n, MPI_REAL, 0, 5, inter, st, ierr)
    if (any(transfer(gr4, 0, n) /= transfer(r4, 0, n))) call wrong('MPI_REAL')
    call counted('MPI_DOUBLE_PRECISION', MPI_DOUBLE_PRECISION, n)
    call MPI_Recv(gr8, n, MPI_DOUBLE_PRECISION, 0, 6, inter, st, ierr)
    if (any(transfer(gr8, 0_8, n) /= transfer(r8, 0_8, n))) call wrong('MPI_DOUBLE_PRECISION')
    call counted('MPI_COMPLEX', MPI_COMPLEX, n)
    call MPI_Recv(gc4, n, MPI_COMPLEX, 0, 7, inter, st, ierr)
    if (any(transfer(gc4, 0, 2*n) /= transfer(c4, 0, 2*n))) call wrong('MPI_COMPLEX')
    call counted('MPI_DOUBLE_COMPLEX', MPI_DOUBLE_COMPLEX, n)
    call MPI_Recv(gc8, n, MPI_DOUBLE_COMPLEX, 0, 8, inter, st, ierr)
    if (any(transfer(gc8, 0_8, 2*n) /= transfer(c8, 0_8, 2*n))) call wrong('MPI_DOUBLE_COMPLEX')
    call counted('MPI_LOGICAL', MPI_LOGICAL, n)
    call MPI_Recv(gl, n, MPI_LOGICAL, 0, 9, inter, st, ierr)
    if (any(gl .neqv. l)) call wrong('MPI_LOGICAL')
    call counted('MPI_CHARACTER', MPI_CHARACTER, n)
    call MPI_Recv(gch, n, MPI_CHARACTER, 0, 10, inter, st, ierr)
    if (gch /= ch) call wrong('MPI_CHARACTER')
    call counted('MPI_REAL4', MPI_REAL4, n)
    call MPI_Recv(gr4, n, MPI_REAL4, 0, 11, inter, st, ierr)
    if (any(transfer(gr4, 0, n) /= transfer(r4, 0, n))) call wrong('MPI_REAL4')
    call counted('MPI_REAL8', MPI_REAL8, n)
    call MPI_Recv(gr8, n, MPI_REAL8, 0, 12, inter, st, ierr)
    if (any(transfer(gr8, 0_8, n) /= transfer(r8, 0_8, n))) call wrong('MPI_REAL8')
    gi4 = 0
    call counted('MPI_2INTEGER', MPI_2INTEGER, n / 2)
    call MPI_Recv(gi4, n / 2, MPI_2INTEGER, 0, 13, inter, st, ierr)
    if (any(gi4 /= i4)) call wrong('MPI_2INTEGER')
  end subroutine
end program datatypes
