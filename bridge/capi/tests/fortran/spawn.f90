! MPI_Comm_spawn from Fortran (`use mpi`), plain MPI (no Isthmus call):
!   spawn manager WORKER   spawns 2 copies of WORKER with the arguments
!       "worker" and "two words" (a blank-terminated argv) on
!       MPI_COMM_SELF, MPI_ERRCODES_IGNORE; then with the children:
!       point-to-point both ways, MPI_Intercomm_merge and an Allreduce on
!       it (which also sums the children's failed checks), disconnect.
!       Prints "PASS manager".
!   spawn multiple WORKER  the same with MPI_Comm_spawn_multiple of two
!       commands, both WORKER, one rank each, with the same arguments in
!       the rows of a (2, 3) argv array; errcodes in an array. Prints
!       "PASS multiple".
!   spawn worker ...       the child: MPI_Comm_get_parent, its arguments,
!       the same exchanges, disconnect; get_parent is then MPI_COMM_NULL.
! spawn_f08.f90 is the same program in `use mpi_f08`.
program spawn
  use mpi
  implicit none
  integer :: ierr, inter, merged, mrank, bad, q, v, back, rank
  integer :: status(MPI_STATUS_SIZE), sums(2), mine(2)
  character(len=512) :: role, worker
  character(len=16) :: argv(3), argvs(2, 3)
  character(len=512) :: commands(2)
  integer :: errcodes(2), infos(2), np(2)

  call MPI_Init(ierr)
  call get_command_argument(1, role)
  bad = 0
  if (role == 'manager' .or. role == 'multiple') then
    call get_command_argument(2, worker)
    argv(1) = 'worker'
    argv(2) = 'two words'
    argv(3) = ' '
    if (role == 'manager') then
      call MPI_Comm_spawn(worker, argv, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, inter, &
                          MPI_ERRCODES_IGNORE, ierr)
    else
      commands = worker
      argvs(1, :) = argv
      argvs(2, :) = argv
      np = 1
      infos = MPI_INFO_NULL
      errcodes = -7
      call MPI_Comm_spawn_multiple(2, commands, argvs, np, infos, 0, MPI_COMM_SELF, inter, &
                                   errcodes, ierr)
      if (any(errcodes /= MPI_SUCCESS)) bad = bad + 1
    end if
    if (ierr /= MPI_SUCCESS .or. inter == MPI_COMM_NULL) then
      print '(a,i0)', 'FAIL manager: MPI_Comm_spawn returned ', ierr
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    do q = 0, 1
      v = 100 + q
      call MPI_Send(v, 1, MPI_INTEGER, q, 7, inter, ierr)
      call MPI_Recv(back, 1, MPI_INTEGER, q, 8, inter, status, ierr)
      if (back /= 2 * v + 1) bad = bad + 1
    end do
    call MPI_Intercomm_merge(inter, .false., merged, ierr)
  else
    call MPI_Comm_get_parent(inter, ierr)
    if (inter == MPI_COMM_NULL) then
      print '(a)', 'FAIL worker: no parent'
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    call get_command_argument(2, worker)
    if (role /= 'worker' .or. worker /= 'two words' .or. command_argument_count() /= 2) &
      bad = bad + 1
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Recv(v, 1, MPI_INTEGER, 0, 7, inter, status, ierr)
    if (v /= 100 + rank) bad = bad + 1
    v = 2 * v + 1
    call MPI_Send(v, 1, MPI_INTEGER, 0, 8, inter, ierr)
    call MPI_Intercomm_merge(inter, .true., merged, ierr)
  end if
  call MPI_Comm_rank(merged, mrank, ierr)
  mine = (/ mrank + 1, bad /)
  call MPI_Allreduce(mine, sums, 2, MPI_INTEGER, MPI_SUM, merged, ierr)
  if (sums(1) /= 6) bad = bad + 1
  call MPI_Comm_free(merged, ierr)
  call MPI_Comm_disconnect(inter, ierr)
  if (role == 'manager' .or. role == 'multiple') then
    if (sums(2) /= 0) print '(a,i0)', 'FAIL manager: the workers failed checks: ', sums(2)
    if (bad == 0 .and. sums(2) == 0) print '(a,a)', 'PASS ', trim(role)
  else
    call MPI_Comm_get_parent(inter, ierr)
    if (inter /= MPI_COMM_NULL) print '(a)', 'FAIL worker: a parent after the disconnect'
  end if
  call MPI_Finalize(ierr)
end program spawn
