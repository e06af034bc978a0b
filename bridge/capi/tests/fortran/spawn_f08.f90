! spawn.f90 in `use mpi_f08`, with an array of errcodes and one more role:
!   spawn_f08 fail COMMAND   MPI_Comm_spawn of a command that cannot start
!       (MPI_ERRORS_RETURN on MPI_COMM_SELF): prints
!       "SPAWN-ERROR same=<0|1> null=<0|1> <MPI_Error_string>" (same: both
!       errcodes are the returned code; null: intercomm is MPI_COMM_NULL),
!       then "PASS fail".
program spawn_f08
  use mpi_f08
  implicit none
  type(MPI_Comm) :: inter, merged
  type(MPI_Status) :: status
  integer :: ierr, mrank, bad, q, v, back, rank, errcodes(2), n, same, null
  integer :: sums(2), mine(2)
  character(len=512) :: role, worker
  character(len=MPI_MAX_ERROR_STRING) :: message
  character(len=16) :: argv(3)

  call MPI_Init(ierr)
  call get_command_argument(1, role)
  bad = 0
  argv(1) = 'worker'
  argv(2) = 'two words'
  argv(3) = ' '
  if (role == 'fail') then
    call get_command_argument(2, worker)
    call MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN)
    errcodes = -7
    call MPI_Comm_spawn(worker, argv, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, inter, &
                        errcodes, ierr)
    same = 0
    if (ierr /= MPI_SUCCESS .and. all(errcodes == ierr)) same = 1
    null = 0
    if (inter == MPI_COMM_NULL) null = 1
    call MPI_Error_string(ierr, message, n)
    print '(a,i0,a,i0,a,a)', 'SPAWN-ERROR same=', same, ' null=', null, ' ', message(1:n)
    print '(a)', 'PASS fail'
    call MPI_Finalize()
    stop
  end if
  if (role == 'manager') then
    call get_command_argument(2, worker)
    errcodes = -7
    call MPI_Comm_spawn(worker, argv, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, inter, &
                        errcodes, ierr)
    if (ierr /= MPI_SUCCESS .or. inter == MPI_COMM_NULL .or. any(errcodes /= MPI_SUCCESS)) then
      print '(a,i0)', 'FAIL manager: MPI_Comm_spawn returned ', ierr
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
    do q = 0, 1
      v = 100 + q
      call MPI_Send(v, 1, MPI_INTEGER, q, 7, inter)
      call MPI_Recv(back, 1, MPI_INTEGER, q, 8, inter, status)
      if (back /= 2 * v + 1) bad = bad + 1
    end do
    call MPI_Intercomm_merge(inter, .false., merged)
  else
    call MPI_Comm_get_parent(inter)
    if (inter == MPI_COMM_NULL) then
      print '(a)', 'FAIL worker: no parent'
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
    call get_command_argument(2, worker)
    if (role /= 'worker' .or. worker /= 'two words' .or. command_argument_count() /= 2) &
      bad = bad + 1
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Recv(v, 1, MPI_INTEGER, 0, 7, inter, status)
    if (v /= 100 + rank) bad = bad + 1
    v = 2 * v + 1
    call MPI_Send(v, 1, MPI_INTEGER, 0, 8, inter)
    call MPI_Intercomm_merge(inter, .true., merged)
  end if
  call MPI_Comm_rank(merged, mrank)
  mine = (/ mrank + 1, bad /)
  call MPI_Allreduce(mine, sums, 2, MPI_INTEGER, MPI_SUM, merged)
  if (sums(1) /= 6) bad = bad + 1
  call MPI_Comm_free(merged)
  call MPI_Comm_disconnect(inter)
  if (role == 'manager') then
    if (sums(2) /= 0) print '(a,i0)', 'FAIL manager: the workers failed checks: ', sums(2)
    if (bad == 0 .and. sums(2) == 0) print '(a)', 'PASS manager'
  else
    call MPI_Comm_get_parent(inter)
    if (inter /= MPI_COMM_NULL) print '(a)', 'FAIL worker: a parent after the disconnect'
  end if
  call MPI_Finalize()
end program spawn_f08
