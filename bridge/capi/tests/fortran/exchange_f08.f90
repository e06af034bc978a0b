! The exchange test's protocol (see exchange.F90) in `use mpi_f08` code,
! with the isthmus_f08 module.
program exchange_f08
  use mpi_f08
  use isthmus_f08
  implicit none
  character(len=64) :: group, peer
  integer :: ierr, rank, nprocs, handle, rsize, side, other, n, i, idx, cmp, done, outcount
  integer :: indices(2)
  logical :: seen(2)
  type(MPI_Comm) :: inter, dup
  type(MPI_Request) :: reqs(4), req
  type(MPI_Status) :: stats(4), st
  logical :: flag
  double precision :: sendd(5), recvd(5), two(2), got2(2)
  integer :: sendi(3), recvi(3), self_out, self_in

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call get_command_argument(1, group)
  call get_command_argument(2, peer)
  side = 2
  if (llt(group, peer)) side = 1
  other = 3 - side

  call isthmus_register(trim(group), MPI_COMM_WORLD, handle, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_register')
  call isthmus_intercomm_create_timeout(handle, peer, 120d0, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_intercomm_create_timeout')
  call MPI_Comm_test_inter(inter, flag)
  call check(flag, 'MPI_Comm_test_inter')
  call MPI_Comm_remote_size(inter, rsize)
  call check(rsize == nprocs, 'MPI_Comm_remote_size')

  ! 1.
  do i = 1, 5
    sendd(i) = side*1000 + rank*10 + i
  end do
  self_out = 4242 + rank
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 1, inter, reqs(1))
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 1, inter, reqs(2))
  call MPI_Irecv(self_in, 1, MPI_INTEGER, rank, 99, MPI_COMM_WORLD, reqs(3))
  call MPI_Isend(self_out, 1, MPI_INTEGER, rank, 99, MPI_COMM_WORLD, reqs(4))
  call MPI_Waitall(4, reqs, stats, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Waitall')
  call check(stats(1)%MPI_SOURCE == rank .and. stats(1)%MPI_TAG == 1, 'status of the bridge receive')
  do i = 1, 5
    call check(recvd(i) == other*1000 + rank*10 + i, 'data of the non-blocking exchange')
  end do
  call check(self_in == 4242 + rank, 'native message in the same MPI_Waitall')
  print '(a,i0,a,5f8.0)', 'f08 rank ', rank, ' waitall received', recvd

  ! 2.
  sendi = [side, rank, 7]
  if (side == 1) then
    call MPI_Send(sendi, 3, MPI_INTEGER, rank, 2, inter)
    call MPI_Recv(recvi, 3, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, st)
  else
    call MPI_Recv(recvi, 3, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, st)
    call MPI_Send(sendi, 3, MPI_INTEGER, rank, 2, inter)
  end if
  call MPI_Get_count(st, MPI_INTEGER, n)
  call check(st%MPI_SOURCE == rank .and. st%MPI_TAG == 2 .and. n == 3, 'status of MPI_Recv')
  call check(recvi(1) == other .and. recvi(2) == rank .and. recvi(3) == 7, 'data of MPI_Recv')
  print '(a,i0,a,3i6)', 'f08 rank ', rank, ' recv received', recvi

  ! 3.
  two = [side + 0.5d0, rank + 0.25d0]
  call MPI_Sendrecv(two, 2, MPI_DOUBLE_PRECISION, rank, 3, got2, 2, MPI_DOUBLE_PRECISION, &
                    rank, 3, inter, MPI_STATUS_IGNORE)
  call check(got2(1) == other + 0.5d0 .and. got2(2) == rank + 0.25d0, 'data of MPI_Sendrecv')

  ! 4.
  if (side == 1) call MPI_Ssend(sendi, 3, MPI_INTEGER, rank, 4, inter)
  call MPI_Probe(rank, 4, inter, st)
  call MPI_Get_count(st, MPI_INTEGER, n)
  call check(n == 3 .and. st%MPI_TAG == 4, 'status of MPI_Probe')
  call MPI_Recv(recvi, 3, MPI_INTEGER, rank, 4, inter, MPI_STATUS_IGNORE)
  call check(recvi(1) == other, 'data after MPI_Probe')
  if (side == 2) call MPI_Ssend(sendi, 3, MPI_INTEGER, rank, 4, inter)

  ! 5.
  call MPI_Isend(sendi, 3, MPI_INTEGER, rank, 5, inter, req)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(rank, 5, inter, flag, st)
  end do
  call MPI_Recv(recvi, 3, MPI_INTEGER, rank, 5, inter, MPI_STATUS_IGNORE)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check(req == MPI_REQUEST_NULL .and. recvi(1) == other, 'MPI_Iprobe and MPI_Wait')

  ! 6.
  call MPI_Comm_dup(inter, dup)
  call MPI_Comm_test_inter(dup, flag)
  call check(flag, 'the duplicate is an intercommunicator')
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 6, dup, reqs(1))
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 6, dup, reqs(2))
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, st)
  end do
  call check(st%MPI_TAG == 6 .and. recvd(5) == other*1000 + rank*10 + 5, 'MPI_Test on the duplicate')
  call MPI_Waitall(1, reqs(2:2), MPI_STATUSES_IGNORE)
  call MPI_Comm_compare(inter, dup, cmp)
  call check(cmp == MPI_CONGRUENT, 'MPI_Comm_compare of the duplicate')
  call MPI_Comm_free(dup)
  call check(dup == MPI_COMM_NULL, 'MPI_Comm_free')

  ! 7.
  recvd = -1
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 7, inter, reqs(1))
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 7, inter, reqs(2))
  seen = .false.
  do i = 1, 2
    call MPI_Waitany(2, reqs, idx, st)
    call check(idx == 1 .or. idx == 2, 'MPI_Waitany index')
    seen(idx) = .true.
  end do
  call check(all(seen), 'MPI_Waitany completed both')
  call check(recvd(3) == other*1000 + rank*10 + 3, 'data of MPI_Waitany')

  ! 8.
  recvd = -1
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 8, inter, reqs(1))
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 8, inter, reqs(2))
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, reqs(1:2), flag, stats(1:2))
  end do
  call check(stats(1)%MPI_TAG == 8 .and. recvd(1) == other*1000 + rank*10 + 1, 'MPI_Testall')

  ! 9.
  recvd = -1
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 9, inter, reqs(1))
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 9, inter, reqs(2))
  done = 0
  do while (done < 2)
    call MPI_Waitsome(2, reqs(1:2), outcount, indices, stats)
    do i = 1, outcount
      call check(indices(i) == 1 .or. indices(i) == 2, 'MPI_Waitsome index')
    end do
    done = done + outcount
  end do
  call check(recvd(2) == other*1000 + rank*10 + 2, 'data of MPI_Waitsome')

  ! 10.
  call MPI_Irecv(recvi, 3, MPI_INTEGER, rank, 77, inter, req)
  call MPI_Cancel(req)
  call MPI_Wait(req, st)
  call MPI_Test_cancelled(st, flag)
  call check(flag, 'MPI_Cancel of a receive')

  call MPI_Comm_free(inter)
  call isthmus_leave(handle, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_leave')
  print '(a,i0,a)', 'f08 rank ', rank, ': all checks passed'
  call MPI_Finalize()

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a,i0,2a)', 'f08 rank ', rank, ': FAILED: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine check
end program exchange_f08
