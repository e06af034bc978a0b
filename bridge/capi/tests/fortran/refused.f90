! Calls Isthmus refuses on its communicators, made from Fortran (whose
! Open MPI bindings go to PMPI_* directly): each must return an error
! naming the call (MPI_ERRORS_RETURN), not run on the local handle; and
! the calls it carries (MPI_Barrier, MPI_Bcast, MPI_Allreduce, MPI_Gather,
! MPI_Intercomm_merge, ...) work through them.
program refused
  use mpi
  implicit none
  character(len=64) :: group, peer
  character(len=MPI_MAX_ERROR_STRING) :: msg
  integer :: ierr, rank, handle, inter, newcomm, req, n, fh
  integer :: x(2), y(2), reqs(2), elen, root, g(64), i, rs

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, group)
  call get_command_argument(2, peer)
  call isthmus_register(group, MPI_COMM_WORLD, handle, ierr)
  call isthmus_intercomm_create_timeout(handle, peer, 120d0, inter, ierr)
  call MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN, ierr)
  x = rank

  ! Carried: a barrier, and a broadcast from rank 0 of the job whose
  ! group sorts first.
  call MPI_Barrier(inter, ierr)
  if (ierr /= MPI_SUCCESS) then
    print '(a,i0,a)', 'refused rank ', rank, ': FAILED: MPI_Barrier'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  x = -1
  root = 0
  if (llt(trim(group), trim(peer))) then
    root = MPI_PROC_NULL
    if (rank == 0) then
      root = MPI_ROOT
      x = (/ 41, 42 /)
    end if
  end if
  call MPI_Bcast(x, 2, MPI_INTEGER, root, inter, ierr)
  if (ierr /= MPI_SUCCESS .or. (root == MPI_PROC_NULL .and. any(x /= -1)) &
      .or. (root /= MPI_PROC_NULL .and. any(x /= (/ 41, 42 /)))) then
    print '(a,i0,a,3i6)', 'refused rank ', rank, ': FAILED: MPI_Bcast ', ierr, x
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  print '(a,i0,a)', 'refused rank ', rank, ': barrier and bcast passed'
  x = rank

  call MPI_Iscan(x, y, 2, MPI_INTEGER, MPI_SUM, inter, req, ierr)
  call expect_refusal(ierr, 'MPI_Iscan')
  ! Carried too: MPI_Allreduce (each group gets the sum of the other's
  ! ranks) and MPI_Gather to rank 0 of the job whose group sorts first.
  call MPI_Comm_remote_size(inter, rs, ierr)
  call MPI_Allreduce(x, y, 2, MPI_INTEGER, MPI_SUM, inter, ierr)
  if (ierr /= MPI_SUCCESS .or. any(y /= rs*(rs-1)/2)) then
    print '(a,i0,a,3i6)', 'refused rank ', rank, ': FAILED: MPI_Allreduce ', ierr, y
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  g = -1
  root = 0
  if (llt(trim(group), trim(peer))) then
    root = MPI_PROC_NULL
    if (rank == 0) root = MPI_ROOT
  end if
  call MPI_Gather(x, 1, MPI_INTEGER, g, 1, MPI_INTEGER, root, inter, ierr)
  if (ierr /= MPI_SUCCESS .or. (root == MPI_ROOT .and. any(g(1:rs) /= (/ (i, i = 0, rs-1) /)))) then
    print '(a,i0,a,i6)', 'refused rank ', rank, ': FAILED: MPI_Gather ', ierr
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  print '(a,i0,a)', 'refused rank ', rank, ': allreduce and gather passed'
  ! Carried: the merge (both jobs pass .false.: the group whose name sorts
  ! first comes first), whose size and rank Fortran asks Isthmus for.
  call MPI_Intercomm_merge(inter, .false., newcomm, ierr)
  call MPI_Comm_size(newcomm, n, ierr)
  call MPI_Comm_rank(newcomm, root, ierr)
  if (.not. llt(trim(group), trim(peer))) root = root - 2
  if (ierr /= MPI_SUCCESS .or. n /= 4 .or. root /= rank) then
    print '(a,i0,a,3i6)', 'refused rank ', rank, ': FAILED: MPI_Intercomm_merge ', ierr, n, root
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Comm_free(newcomm, ierr)
  call MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, newcomm, ierr)
  call expect_refusal(ierr, 'MPI_Comm_split_type')
  call MPI_Cart_create(inter, 1, x(1:1), (/ .false. /), .false., newcomm, ierr)
  call expect_refusal(ierr, 'MPI_Cart_create')
  call MPI_Iexscan(x, y, 1, MPI_INTEGER, MPI_SUM, inter, req, ierr)
  call expect_refusal(ierr, 'MPI_Iexscan')
  ! Generated from mpi.h (build.rs), not written by hand:
  call MPI_File_open(inter, 'isthmus-refused', MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call expect_refusal(ierr, 'MPI_File_open')
  call MPI_Intercomm_create(inter, 0, MPI_COMM_WORLD, 0, 7, newcomm, ierr)
  call expect_refusal(ierr, 'MPI_Intercomm_create')
  call MPI_Cartdim_get(inter, n, ierr)
  call expect_refusal(ierr, 'MPI_Cartdim_get')

  ! A negative count is an error naming it (raised on MPI_COMM_WORLD;
  ! Isthmus's message under Open MPI, MPICH's own under MPICH).
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  reqs = MPI_REQUEST_NULL
  call MPI_Waitall(-1, reqs, MPI_STATUSES_IGNORE, ierr)
  call MPI_Error_string(ierr, msg, elen, n)
  if (ierr == MPI_SUCCESS .or. index(msg(1:elen), 'count') == 0) then
    print '(a,i0,2a)', 'refused rank ', rank, ': FAILED: MPI_Waitall(-1): ', msg(1:elen)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)

  ! The same calls on an ordinary communicator still work.
  call MPI_Allreduce(x, y, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
  if (ierr /= MPI_SUCCESS .or. y(1) /= n*(n-1)/2) then
    print '(a,i0,a)', 'refused rank ', rank, ': FAILED: MPI_Allreduce on MPI_COMM_WORLD'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  call MPI_Comm_free(inter, ierr)
  call isthmus_leave(handle, ierr)
  print '(a,i0,a)', 'refused rank ', rank, ': all checks passed'
  call MPI_Finalize(ierr)

contains

  subroutine expect_refusal(code, call)
    integer, intent(in) :: code
    character(len=*), intent(in) :: call
    integer :: len, e
    if (code == MPI_SUCCESS) then
      print '(a,i0,3a)', 'refused rank ', rank, ': FAILED: ', call, ' succeeded on an Isthmus communicator'
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
    call MPI_Error_string(code, msg, len, e)
    if (index(msg(1:len), call) == 0 .or. index(msg(1:len), 'not supported') == 0) then
      print '(a,i0,4a)', 'refused rank ', rank, ': FAILED: ', call, ': unexpected error: ', msg(1:len)
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
    if (rank == 0) print '(3a)', call, ' refused: ', msg(1:len)
  end subroutine expect_refusal
end program refused
