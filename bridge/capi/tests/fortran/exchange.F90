! One side of the Fortran exchange test: registers MPI_COMM_WORLD as
! GROUP, forms an Isthmus intercommunicator with PEER, and exchanges data
! with the peer job (exchange.c, or this program) using plain MPI calls,
! checking every value. Rank r talks to remote rank r; the side whose
! group name sorts first is side 1, the other side 2. Values sent by rank
! r of side s: s*1000 + r*10 + i.
!
! Built with -DUSE_MPIF_H for `include 'mpif.h'`, else `use mpi`.
program exchange
#define FLOOD_MESSAGES 8000
#ifndef USE_MPIF_H
  use mpi
#endif
  implicit none
#ifdef USE_MPIF_H
  include 'mpif.h'
#endif
  character(len=64) :: group, peer
  integer :: ierr, rank, nprocs, handle, inter, dup, rsize, side, other, n, i
  integer :: reqs(4), stats(MPI_STATUS_SIZE, 4), st(MPI_STATUS_SIZE), req, idx, cmp, done
  integer :: indices(2), outcount
  logical :: seen(2)
  logical :: flag
  double precision :: sendd(5), recvd(5), two(2), got2(2)
  integer :: sendi(3), recvi(3), self_out, self_in
  integer :: flood(256)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call get_command_argument(1, group)
  call get_command_argument(2, peer)
  side = 2
  if (llt(group, peer)) side = 1
  other = 3 - side

  call isthmus_register(group, MPI_COMM_WORLD, handle, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_register')
  call isthmus_intercomm_create_timeout(handle, peer, 120d0, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_intercomm_create_timeout')

  call MPI_Comm_test_inter(inter, flag, ierr)
  call check(flag, 'MPI_Comm_test_inter')
  call MPI_Comm_remote_size(inter, rsize, ierr)
  call check(rsize == nprocs, 'MPI_Comm_remote_size')

  ! 1. Isend/Irecv over the bridge and a native pair in one Waitall.
  do i = 1, 5
    sendd(i) = side*1000 + rank*10 + i
  end do
  recvd = -1
  self_out = 4242 + rank
  self_in = -1
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 1, inter, reqs(1), ierr)
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 1, inter, reqs(2), ierr)
  call MPI_Irecv(self_in, 1, MPI_INTEGER, rank, 99, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Isend(self_out, 1, MPI_INTEGER, rank, 99, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitall(4, reqs, stats, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Waitall')
  call check(all(reqs == MPI_REQUEST_NULL), 'requests are MPI_REQUEST_NULL after MPI_Waitall')
  call check(stats(MPI_SOURCE, 1) == rank .and. stats(MPI_TAG, 1) == 1, 'status of the bridge receive')
  do i = 1, 5
    call check(recvd(i) == other*1000 + rank*10 + i, 'data of the non-blocking exchange')
  end do
  call check(self_in == 4242 + rank, 'native message in the same MPI_Waitall')
  print '(a,i0,a,5f8.0)', 'fortran rank ', rank, ' waitall received', recvd

  ! 2. Blocking Send/Recv with wildcards and a status.
  sendi = (/ side, rank, 7 /)
  recvi = -1
  if (side == 1) then
    call MPI_Send(sendi, 3, MPI_INTEGER, rank, 2, inter, ierr)
    call MPI_Recv(recvi, 3, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, st, ierr)
  else
    call MPI_Recv(recvi, 3, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, st, ierr)
    call MPI_Send(sendi, 3, MPI_INTEGER, rank, 2, inter, ierr)
  end if
  call MPI_Get_count(st, MPI_INTEGER, n, ierr)
  call check(st(MPI_SOURCE) == rank .and. st(MPI_TAG) == 2 .and. n == 3, 'status of MPI_Recv')
  call check(recvi(1) == other .and. recvi(2) == rank .and. recvi(3) == 7, 'data of MPI_Recv')
  print '(a,i0,a,3i6)', 'fortran rank ', rank, ' recv received', recvi

  ! 3. Sendrecv.
  two = (/ side + 0.5d0, rank + 0.25d0 /)
  call MPI_Sendrecv(two, 2, MPI_DOUBLE_PRECISION, rank, 3, got2, 2, MPI_DOUBLE_PRECISION, &
                    rank, 3, inter, MPI_STATUS_IGNORE, ierr)
  call check(got2(1) == other + 0.5d0 .and. got2(2) == rank + 0.25d0, 'data of MPI_Sendrecv')

  ! 4. Ssend one way, Probe on the other; then the other way.
  if (side == 1) then
    call MPI_Ssend(sendi, 3, MPI_INTEGER, rank, 4, inter, ierr)
    call MPI_Probe(rank, 4, inter, st, ierr)
  else
    call MPI_Probe(rank, 4, inter, st, ierr)
  end if
  call MPI_Get_count(st, MPI_INTEGER, n, ierr)
  call check(n == 3 .and. st(MPI_TAG) == 4, 'status of MPI_Probe')
  call MPI_Recv(recvi, 3, MPI_INTEGER, rank, 4, inter, MPI_STATUS_IGNORE, ierr)
  call check(recvi(1) == other, 'data after MPI_Probe')
  if (side == 2) call MPI_Ssend(sendi, 3, MPI_INTEGER, rank, 4, inter, ierr)

  ! 5. Iprobe until the message is there.
  call MPI_Isend(sendi, 3, MPI_INTEGER, rank, 5, inter, req, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(rank, 5, inter, flag, st, ierr)
  end do
  call MPI_Recv(recvi, 3, MPI_INTEGER, rank, 5, inter, MPI_STATUS_IGNORE, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call check(req == MPI_REQUEST_NULL .and. recvi(1) == other, 'MPI_Iprobe and MPI_Wait')

  ! 6. A duplicate of the intercommunicator, and MPI_Test.
  call MPI_Comm_dup(inter, dup, ierr)
  call MPI_Comm_test_inter(dup, flag, ierr)
  call check(flag, 'the duplicate is an intercommunicator')
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 6, dup, reqs(1), ierr)
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 6, dup, reqs(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, st, ierr)
  end do
  call check(st(MPI_TAG) == 6 .and. recvd(5) == other*1000 + rank*10 + 5, 'MPI_Test on the duplicate')
  call MPI_Waitall(1, reqs(2:2), MPI_STATUSES_IGNORE, ierr)
  call MPI_Comm_compare(inter, dup, cmp, ierr)
  call check(cmp == MPI_CONGRUENT, 'MPI_Comm_compare of the duplicate')
  call MPI_Comm_free(dup, ierr)
  call check(dup == MPI_COMM_NULL, 'MPI_Comm_free')

  ! 7. Waitany: Fortran indices are 1-based.
  recvd = -1
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 7, inter, reqs(1), ierr)
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 7, inter, reqs(2), ierr)
  seen = .false.
  do i = 1, 2
    call MPI_Waitany(2, reqs, idx, st, ierr)
    call check(idx == 1 .or. idx == 2, 'MPI_Waitany index')
    seen(idx) = .true.
  end do
  call check(all(seen) .and. all(reqs(1:2) == MPI_REQUEST_NULL), 'MPI_Waitany completed both')
  call check(recvd(3) == other*1000 + rank*10 + 3, 'data of MPI_Waitany')

  ! 8. Testall.
  recvd = -1
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 8, inter, reqs(1), ierr)
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 8, inter, reqs(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, reqs, flag, stats, ierr)
  end do
  call check(stats(MPI_TAG, 1) == 8 .and. recvd(1) == other*1000 + rank*10 + 1, 'MPI_Testall')

  ! 9. Waitsome.
  recvd = -1
  call MPI_Irecv(recvd, 5, MPI_DOUBLE_PRECISION, rank, 9, inter, reqs(1), ierr)
  call MPI_Isend(sendd, 5, MPI_DOUBLE_PRECISION, rank, 9, inter, reqs(2), ierr)
  done = 0
  do while (done < 2)
    call MPI_Waitsome(2, reqs, outcount, indices, stats, ierr)
    do i = 1, outcount
      call check(indices(i) == 1 .or. indices(i) == 2, 'MPI_Waitsome index')
    end do
    done = done + outcount
  end do
  call check(recvd(2) == other*1000 + rank*10 + 2, 'data of MPI_Waitsome')

  ! 10. Cancel a receive that nothing matches.
  call MPI_Irecv(recvi, 3, MPI_INTEGER, rank, 77, inter, req, ierr)
  call MPI_Cancel(req, ierr)
  call MPI_Wait(req, st, ierr)
  call MPI_Test_cancelled(st, flag, ierr)
  call check(flag, 'MPI_Cancel of a receive')

  ! 11. Sends that completed survive their sender's MPI_Finalize: side 1
  ! sends more than its eager window, then leaves and finalizes at once;
  ! side 2 receives only after a nap. (Open MPI's Fortran MPI_Finalize goes
  ! to PMPI_Finalize directly: libisthmus interposes it too.)
  if (side == 1) then
    do i = 1, FLOOD_MESSAGES
      flood = i*7 + rank
      call MPI_Send(flood, 256, MPI_INTEGER, rank, 11, inter, ierr)
    end do
  else
    call sleep(2)
    do i = 1, FLOOD_MESSAGES
      call MPI_Recv(flood, 256, MPI_INTEGER, rank, 11, inter, MPI_STATUS_IGNORE, ierr)
      call check(ierr == MPI_SUCCESS .and. all(flood == i*7 + rank), 'a message sent before its sender finalized')
    end do
  end if

  call MPI_Comm_free(inter, ierr)
  call isthmus_leave(handle, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_leave')
  print '(a,i0,a)', 'fortran rank ', rank, ': all checks passed'
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (.not. ok) then
      print '(a,i0,2a)', 'fortran rank ', rank, ': FAILED: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine check
end program exchange
