! The intercommunicator collectives from Fortran (`use mpi`): the v and w
! forms and every nonblocking form, all fifteen outstanding at once and
! completed by one MPI_Waitall, between two jobs of two ranks each.
! Open MPI's Fortran bindings call PMPI_* directly, past libisthmus's C
! entry points; these calls must reach Isthmus's bodies through the
! interposed Fortran names. MPICH's call the C functions.
!
! Arguments: this job's group, the other job's group. The job whose group
! sorts first is side 1 (A), the other side 2 (B). Every value received
! is checked; each rank prints "collectives rank N: all checks passed".
program collectives
  use mpi
  implicit none
  character(len=64) :: group, peer
  integer :: ierr, rank, size, rs, handle, inter, side, other, i, j, k, b
  integer :: root_a0, root_b0, root_b1, intsize, nreq
  logical :: first
  integer :: sendv(8), recvv(8)
  integer :: counts(2), displs(2), scounts(2), sdispls(2), rcounts(2), rdispls(2)
  integer :: stypes(2), rtypes(2)
  ! The nonblocking calls' buffers: one column each, all live together.
  integer :: s(8, 15), r(8, 15), reqs(15)
  integer :: nscounts(2, 4), nsdispls(2, 4), nrcounts(2, 4), nrdispls(2, 4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, group)
  call get_command_argument(2, peer)
  call isthmus_register(group, MPI_COMM_WORLD, handle, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_register')
  call isthmus_intercomm_create_timeout(handle, peer, 120d0, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'isthmus_intercomm_create_timeout')
  call MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN, ierr)
  call MPI_Comm_remote_size(inter, rs, ierr)
  call check(size == 2 .and. rs == 2, 'two ranks on each side')
  call MPI_Type_size(MPI_INTEGER, intsize, ierr)
  first = llt(trim(group), trim(peer))
  side = 2
  if (first) side = 1
  other = 3 - side
  ! Roots: rank 0 of A, rank 0 of B, rank 1 of B (MPI_ROOT there, the
  ! root's rank in the other group).
  root_a0 = 0
  root_b0 = 0
  root_b1 = 1
  if (first) then
    root_a0 = merge(MPI_ROOT, MPI_PROC_NULL, rank == 0)
  else
    root_b0 = merge(MPI_ROOT, MPI_PROC_NULL, rank == 0)
    root_b1 = merge(MPI_ROOT, MPI_PROC_NULL, rank == 1)
  end if
  counts = (/ 1, 2 /)
  displs = (/ 0, 1 /)

  ! ---------------------------------------------------------------- blocking
  ! Gatherv to A's rank 0: B's rank q sends q+1 values.
  do k = 1, rank + 1
    sendv(k) = v(side, rank, k)
  end do
  recvv = -1
  call MPI_Gatherv(sendv, rank + 1, MPI_INTEGER, recvv, counts, displs, &
                   MPI_INTEGER, root_a0, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Gatherv')
  if (first .and. rank == 0) call check(all(recvv(1:3) == &
      (/ v(2, 0, 1), v(2, 1, 1), v(2, 1, 2) /)) .and. recvv(4) == -1, 'MPI_Gatherv values')
  if (first .and. rank == 1) call check(all(recvv == -1), 'MPI_Gatherv: no root, nothing')

  ! Scatterv from B's rank 1: counts (2, 1) at displacements (1, 0).
  do k = 1, 3
    sendv(k) = v(2, 1, k)
  end do
  recvv = -1
  call MPI_Scatterv(sendv, (/ 2, 1 /), (/ 1, 0 /), MPI_INTEGER, recvv, 2 - rank, &
                    MPI_INTEGER, root_b1, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Scatterv')
  if (first .and. rank == 0) call check(all(recvv(1:2) == (/ v(2, 1, 2), v(2, 1, 3) /)) &
      .and. recvv(3) == -1, 'MPI_Scatterv values')
  if (first .and. rank == 1) call check(recvv(1) == v(2, 1, 1) .and. recvv(2) == -1, &
      'MPI_Scatterv values')

  ! Allgatherv: every rank's rank+1 values to the other group.
  do k = 1, rank + 1
    sendv(k) = v(side, rank, k)
  end do
  recvv = -1
  call MPI_Allgatherv(sendv, rank + 1, MPI_INTEGER, recvv, counts, displs, &
                      MPI_INTEGER, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Allgatherv')
  call check(all(recvv(1:3) == (/ v(other, 0, 1), v(other, 1, 1), v(other, 1, 2) /)), &
             'MPI_Allgatherv values')

  ! Alltoallv: j+1 values to remote rank j; rank+1 from each.
  call alltoall_layout(rank, sendv, scounts, sdispls, rcounts, rdispls)
  recvv = -1
  call MPI_Alltoallv(sendv, scounts, sdispls, MPI_INTEGER, recvv, rcounts, rdispls, &
                     MPI_INTEGER, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Alltoallv')
  call check_alltoall(recvv, 'MPI_Alltoallv values')

  ! Alltoallw: the same blocks, displacements in bytes, a type per block.
  call alltoall_layout(rank, sendv, scounts, sdispls, rcounts, rdispls)
  stypes = MPI_INTEGER
  rtypes = MPI_INTEGER
  recvv = -1
  call MPI_Alltoallw(sendv, scounts, sdispls * intsize, stypes, recvv, rcounts, &
                     rdispls * intsize, rtypes, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Alltoallw')
  call check_alltoall(recvv, 'MPI_Alltoallw values')

  ! Reduce_scatter: the other group's two vectors summed, one element each.
  sendv(1:2) = (/ 100 * side + 10 * rank + 1, 100 * side + 10 * rank + 2 /)
  recvv = -1
  call MPI_Reduce_scatter(sendv, recvv, (/ 1, 1 /), MPI_INTEGER, MPI_SUM, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Reduce_scatter')
  call check(recvv(1) == 200 * other + 2 * (rank + 1) + 10 .and. recvv(2) == -1, &
             'MPI_Reduce_scatter values')
  print '(a,i0,a)', 'collectives rank ', rank, ': blocking v and w passed'

  ! ------------------------------------------------------------- nonblocking
  s = -2
  r = -1
  nreq = 0
  call MPI_Ibarrier(inter, reqs(1), ierr)
  call started('MPI_Ibarrier')
  ! Ibcast from A's rank 0.
  if (first .and. rank == 0) r(1:3, 2) = (/ 7, 8, 9 /)
  call MPI_Ibcast(r(1, 2), 3, MPI_INTEGER, root_a0, inter, reqs(2), ierr)
  call started('MPI_Ibcast')
  s(1, 3) = 100 * side + rank + 1
  call MPI_Iallreduce(s(1, 3), r(1, 3), 1, MPI_INTEGER, MPI_SUM, inter, reqs(3), ierr)
  call started('MPI_Iallreduce')
  s(1, 4) = 100 * side + rank + 1
  call MPI_Ireduce(s(1, 4), r(1, 4), 1, MPI_INTEGER, MPI_SUM, root_b0, inter, reqs(4), ierr)
  call started('MPI_Ireduce')
  s(1, 5) = v(side, rank, 1)
  call MPI_Igather(s(1, 5), 1, MPI_INTEGER, r(1, 5), 1, MPI_INTEGER, root_a0, inter, &
                   reqs(5), ierr)
  call started('MPI_Igather')
  s(1:2, 6) = (/ v(side, rank, 1), v(side, rank, 2) /)
  call MPI_Iscatter(s(1, 6), 1, MPI_INTEGER, r(1, 6), 1, MPI_INTEGER, root_b0, inter, &
                    reqs(6), ierr)
  call started('MPI_Iscatter')
  s(1, 7) = v(side, rank, 1)
  call MPI_Iallgather(s(1, 7), 1, MPI_INTEGER, r(1, 7), 1, MPI_INTEGER, inter, reqs(7), ierr)
  call started('MPI_Iallgather')
  s(1:2, 8) = (/ v(side, rank, 1), v(side, rank, 2) /)
  call MPI_Ialltoall(s(1, 8), 1, MPI_INTEGER, r(1, 8), 1, MPI_INTEGER, inter, reqs(8), ierr)
  call started('MPI_Ialltoall')
  do k = 1, rank + 1
    s(k, 9) = v(side, rank, k)
  end do
  call MPI_Igatherv(s(1, 9), rank + 1, MPI_INTEGER, r(1, 9), counts, displs, MPI_INTEGER, &
                    root_a0, inter, reqs(9), ierr)
  call started('MPI_Igatherv')
  do k = 1, 3
    s(k, 10) = v(2, 1, k)
  end do
  nscounts(:, 1) = (/ 2, 1 /)
  nsdispls(:, 1) = (/ 1, 0 /)
  call MPI_Iscatterv(s(1, 10), nscounts(:, 1), nsdispls(:, 1), MPI_INTEGER, r(1, 10), &
                     2 - rank, MPI_INTEGER, root_b1, inter, reqs(10), ierr)
  call started('MPI_Iscatterv')
  do k = 1, rank + 1
    s(k, 11) = v(side, rank, k)
  end do
  call MPI_Iallgatherv(s(1, 11), rank + 1, MPI_INTEGER, r(1, 11), counts, displs, &
                       MPI_INTEGER, inter, reqs(11), ierr)
  call started('MPI_Iallgatherv')
  call alltoall_layout(rank, s(:, 12), nscounts(:, 2), nsdispls(:, 2), nrcounts(:, 2), &
                       nrdispls(:, 2))
  call MPI_Ialltoallv(s(1, 12), nscounts(:, 2), nsdispls(:, 2), MPI_INTEGER, r(1, 12), &
                      nrcounts(:, 2), nrdispls(:, 2), MPI_INTEGER, inter, reqs(12), ierr)
  call started('MPI_Ialltoallv')
  call alltoall_layout(rank, s(:, 13), nscounts(:, 3), nsdispls(:, 3), nrcounts(:, 3), &
                       nrdispls(:, 3))
  nsdispls(:, 3) = nsdispls(:, 3) * intsize
  nrdispls(:, 3) = nrdispls(:, 3) * intsize
  call MPI_Ialltoallw(s(1, 13), nscounts(:, 3), nsdispls(:, 3), stypes, r(1, 13), &
                      nrcounts(:, 3), nrdispls(:, 3), rtypes, inter, reqs(13), ierr)
  call started('MPI_Ialltoallw')
  s(1:2, 14) = (/ 100 * side + 10 * rank + 1, 100 * side + 10 * rank + 2 /)
  nrcounts(:, 4) = (/ 1, 1 /)
  call MPI_Ireduce_scatter(s(1, 14), r(1, 14), nrcounts(:, 4), MPI_INTEGER, MPI_SUM, inter, &
                           reqs(14), ierr)
  call started('MPI_Ireduce_scatter')
  s(1:2, 15) = (/ 100 * side + 10 * rank + 1, 100 * side + 10 * rank + 2 /)
  call MPI_Ireduce_scatter_block(s(1, 15), r(1, 15), 1, MPI_INTEGER, MPI_SUM, inter, &
                                 reqs(15), ierr)
  call started('MPI_Ireduce_scatter_block')
  call check(nreq == 15, 'fifteen requests started')
  call MPI_Waitall(15, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Waitall of fifteen nonblocking collectives')
  call check(all(reqs == MPI_REQUEST_NULL), 'requests freed by MPI_Waitall')

  if (.not. first) call check(all(r(1:3, 2) == (/ 7, 8, 9 /)), 'MPI_Ibcast values')
  if (first .and. rank == 1) call check(all(r(1:3, 2) == -1), 'MPI_Ibcast: no root, nothing')
  call check(r(1, 3) == 200 * other + 3, 'MPI_Iallreduce value')
  if (.not. first .and. rank == 0) call check(r(1, 4) == 203, 'MPI_Ireduce value')
  if (first .and. rank == 0) call check(all(r(1:2, 5) == (/ v(2, 0, 1), v(2, 1, 1) /)), &
                                        'MPI_Igather values')
  if (first) call check(r(1, 6) == v(2, 0, rank + 1) .and. r(2, 6) == -1, 'MPI_Iscatter value')
  call check(all(r(1:2, 7) == (/ v(other, 0, 1), v(other, 1, 1) /)), 'MPI_Iallgather values')
  call check(all(r(1:2, 8) == (/ v(other, 0, rank + 1), v(other, 1, rank + 1) /)), &
             'MPI_Ialltoall values')
  if (first .and. rank == 0) call check(all(r(1:3, 9) == &
      (/ v(2, 0, 1), v(2, 1, 1), v(2, 1, 2) /)), 'MPI_Igatherv values')
  if (first .and. rank == 0) call check(all(r(1:2, 10) == (/ v(2, 1, 2), v(2, 1, 3) /)), &
                                        'MPI_Iscatterv values')
  if (first .and. rank == 1) call check(r(1, 10) == v(2, 1, 1) .and. r(2, 10) == -1, &
                                        'MPI_Iscatterv values')
  call check(all(r(1:3, 11) == (/ v(other, 0, 1), v(other, 1, 1), v(other, 1, 2) /)), &
             'MPI_Iallgatherv values')
  call check_alltoall(r(:, 12), 'MPI_Ialltoallv values')
  call check_alltoall(r(:, 13), 'MPI_Ialltoallw values')
  call check(r(1, 14) == 200 * other + 2 * (rank + 1) + 10 .and. r(2, 14) == -1, &
             'MPI_Ireduce_scatter value')
  call check(r(1, 15) == 200 * other + 2 * (rank + 1) + 10 .and. r(2, 15) == -1, &
             'MPI_Ireduce_scatter_block value')
  print '(a,i0,a)', 'collectives rank ', rank, ': nonblocking passed'

  call MPI_Comm_free(inter, ierr)
  print '(a,i0,a)', 'collectives rank ', rank, ': all checks passed'
  call MPI_Finalize(ierr)

contains

  !> The value side `s`'s rank `q` sends as its k-th.
  integer function v(s, q, k)
    integer, intent(in) :: s, q, k
    v = 1000 * s + 10 * q + k
  end function v

  !> The all-to-all blocks: to remote rank j, j+1 values w(side, rank, j, k);
  !> from each remote rank, rank+1 values.
  subroutine alltoall_layout(me, buf, sc, sd, rc, rd)
    integer, intent(in) :: me
    integer, intent(out) :: buf(:), sc(2), sd(2), rc(2), rd(2)
    integer :: jj, kk, at
    at = 0
    do jj = 0, 1
      sc(jj + 1) = jj + 1
      sd(jj + 1) = at
      do kk = 1, jj + 1
        buf(at + kk) = 1000 * side + 100 * jj + 10 * me + kk
      end do
      at = at + jj + 1
    end do
    rc = me + 1
    rd = (/ 0, me + 1 /)
  end subroutine alltoall_layout

  !> Remote rank i's block, at i*(rank+1): w(other, i, rank, k).
  subroutine check_alltoall(got, what)
    integer, intent(in) :: got(:)
    character(len=*), intent(in) :: what
    integer :: ii, kk
    do ii = 0, 1
      do kk = 1, rank + 1
        call check(got(ii * (rank + 1) + kk) == 1000 * other + 100 * rank + 10 * ii + kk, what)
      end do
    end do
    call check(got(2 * (rank + 1) + 1) == -1, what // ' (nothing past the blocks)')
  end subroutine check_alltoall

  subroutine started(what)
    character(len=*), intent(in) :: what
    call check(ierr == MPI_SUCCESS, what)
    nreq = nreq + 1
  end subroutine started

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e, len
    character(len=MPI_MAX_ERROR_STRING) :: msg
    if (.not. ok) then
      msg = ''
      if (ierr /= MPI_SUCCESS) call MPI_Error_string(ierr, msg, len, e)
      print '(a,i0,4a)', 'collectives rank ', rank, ': FAILED: ', what, ' ', trim(msg)
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine check
end program collectives
