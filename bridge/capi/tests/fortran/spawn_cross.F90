! MPI_Comm_spawn_multiple of an Open MPI command and an MPICH command from
! Fortran, plain MPI (no Isthmus call). One source for the three bindings:
! `use mpi` (the default), `use mpi_f08` (-DF08) and `mpif.h` (-DUSE_MPIF_H).
!   spawn_cross manager WORKER_A WORKER_B
!       every rank of MPI_COMM_WORLD calls MPI_Comm_spawn_multiple with the
!       last rank as root: 1 rank of WORKER_A with the arguments "worker
!       first" and the info key isthmus_env ISTHMUS_TEST_APP=one, 2 ranks of
!       WORKER_B with "worker second two words" and ISTHMUS_TEST_APP=two (the
!       rows of a (2, 4) argv array of different lengths, each ended by a
!       blank entry), errcodes in an array. WORKER_A and WORKER_B are this
!       program built for the two implementations: the children are one
!       world of 3. Then with them (`exchange`): point-to-point both ways,
!       Bcast both ways (MPI_ROOT / MPI_PROC_NULL), Allreduce, and
!       MPI_Intercomm_merge refused (three jobs) with MPI_ERRORS_RETURN;
!       rank 0 receives each child's MPI library ("CHILD-LIBRARY <q>
!       <line>") and its count of failed checks; disconnect. Prints "PASS
!       cross rank <r>" on each parent whose checks passed.
!   spawn_cross worker ...
!       the child: MPI_Comm_get_parent, its command's arguments and
!       isthmus_env, the world's size, the same exchanges; its verdict goes
!       to the parents (its output goes to the virtual machine).
program spawn_cross
#if defined(F08)
  use mpi_f08
#elif !defined(USE_MPIF_H)
  use mpi
#endif
  implicit none
#if defined(USE_MPIF_H)
  include 'mpif.h'
#endif
#if defined(F08)
  type(MPI_Comm) :: inter, merged
  type(MPI_Info) :: infos(2)
#else
  integer :: inter, merged
  integer :: infos(2)
#endif
  integer :: ierr, rank, size, bad
  character(len=32) :: role
  character(len=256) :: library

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, role)
  bad = 0
  if (role == 'worker') then
    call worker()
  else
    call manager()
  end if
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      bad = bad + 1
      print '(a,a,i0,a,a)', trim(role), ' rank ', rank, ': FAIL ', what
    end if
  end subroutine check

  ! The first line of MPI_Get_library_version, blank-padded.
  subroutine library_line(line)
    character(len=*), intent(out) :: line
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
    integer :: n, eol
    call MPI_Get_library_version(version, n, ierr)
    eol = index(version(1:n), new_line('a'))
    if (eol > 0) n = eol - 1
    line = version(1:n)
  end subroutine library_line

  ! What both sides do on the intercommunicator (as tests/c/spawn.c's
  ! `exchange` with `cross`); `parent` on the managers' side.
  subroutine exchange(parent)
    logical, intent(in) :: parent
    integer :: turn, q, v, back, lrank, rsize, mine, total, want, root, rc, n
    double precision :: d(3)
    character(len=MPI_MAX_ERROR_STRING) :: message
    call MPI_Comm_rank(inter, lrank, ierr)
    call MPI_Comm_remote_size(inter, rsize, ierr)
    ! Point-to-point: one side's rank 0 sends each remote rank a value,
    ! which it sends back changed; then the other way.
    do turn = 0, 1
      if (((turn == 0) .eqv. parent) .and. lrank == 0) then
        do q = 0, rsize - 1
          v = 100 * (turn + 1) + q
          call MPI_Send(v, 1, MPI_INTEGER, q, 7, inter, ierr)
          call MPI_Recv(back, 1, MPI_INTEGER, q, 8, inter, MPI_STATUS_IGNORE, ierr)
          call check(back == 2 * v + 1, 'a point-to-point answer')
        end do
      else if (.not. ((turn == 0) .eqv. parent)) then
        call MPI_Recv(v, 1, MPI_INTEGER, 0, 7, inter, MPI_STATUS_IGNORE, ierr)
        call check(v == 100 * (turn + 1) + lrank, 'a point-to-point value')
        v = 2 * v + 1
        call MPI_Send(v, 1, MPI_INTEGER, 0, 8, inter, ierr)
      end if
    end do
    ! Bcast: each side's rank 0 broadcasts to the other.
    do turn = 0, 1
      if ((turn == 0) .eqv. parent) then
        d = (/ 1.5d0, -2.0d0, 1d10 + turn /)
        root = MPI_PROC_NULL
        if (lrank == 0) root = MPI_ROOT
        call MPI_Bcast(d, 3, MPI_DOUBLE_PRECISION, root, inter, ierr)
      else
        d = 0
        call MPI_Bcast(d, 3, MPI_DOUBLE_PRECISION, 0, inter, ierr)
        call check(all(d == (/ 1.5d0, -2.0d0, 1d10 + turn /)), 'Bcast')
      end if
    end do
    ! Allreduce: each side gets the sum over the other.
    mine = merge(1000 + lrank, lrank + 1, parent)
    call MPI_Allreduce(mine, total, 1, MPI_INTEGER, MPI_SUM, inter, ierr)
    want = 0
    do q = 0, rsize - 1
      want = want + merge(q + 1, 1000 + q, parent)
    end do
    call check(total == want, 'Allreduce')
    ! The intercommunicator spans three jobs: no merge, and it says why.
    call MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN, ierr)
    merged = MPI_COMM_NULL
    call MPI_Intercomm_merge(inter, .not. parent, merged, rc)
    n = 0
    if (rc /= MPI_SUCCESS) call MPI_Error_string(rc, message, n, ierr)
    call check(rc /= MPI_SUCCESS .and. merged == MPI_COMM_NULL, 'MPI_Intercomm_merge refused')
    call check(index(message(1:n), 'three jobs') > 0, 'the merge''s refusal says why')
  end subroutine exchange

  subroutine manager()
    character(len=512) :: commands(2)
    character(len=16) :: argvs(2, 4)
    integer :: errcodes(3), np(2), lrank, lsize, rsize, q, theirs
    call get_command_argument(2, commands(1))
    call get_command_argument(3, commands(2))
    argvs(1, :) = (/ character(len=16) :: 'worker', 'first', ' ', ' ' /)
    argvs(2, :) = (/ character(len=16) :: 'worker', 'second', 'two words', ' ' /)
    np = (/ 1, 2 /)
    call MPI_Info_create(infos(1), ierr)
    call MPI_Info_set(infos(1), 'isthmus_env', 'ISTHMUS_TEST_APP=one', ierr)
    call MPI_Info_create(infos(2), ierr)
    call MPI_Info_set(infos(2), 'isthmus_env', 'ISTHMUS_TEST_APP=two', ierr)
    errcodes = -7
    call MPI_Comm_spawn_multiple(2, commands, argvs, np, infos, size - 1, MPI_COMM_WORLD, &
                                 inter, errcodes, ierr)
    if (ierr /= MPI_SUCCESS .or. inter == MPI_COMM_NULL) then
      print '(a,i0,a,i0)', 'cross rank ', rank, ': FAIL MPI_Comm_spawn_multiple returned ', ierr
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    call check(all(errcodes == MPI_SUCCESS), 'errcodes')
    call MPI_Comm_remote_size(inter, rsize, ierr)
    call MPI_Comm_size(inter, lsize, ierr)
    call MPI_Comm_rank(inter, lrank, ierr)
    call check(rsize == 3 .and. lsize == size .and. lrank == rank, 'the sizes and rank')
    call exchange(.true.)
    if (lrank == 0) then
      do q = 0, rsize - 1
        call MPI_Recv(library, len(library), MPI_CHARACTER, q, 10, inter, MPI_STATUS_IGNORE, &
                      ierr)
        print '(a,i0,a,a)', 'CHILD-LIBRARY ', q, ' ', trim(library)
      end do
      do q = 0, rsize - 1
        theirs = -1
        call MPI_Recv(theirs, 1, MPI_INTEGER, q, 9, inter, MPI_STATUS_IGNORE, ierr)
        call check(theirs == 0, 'a child''s checks')
      end do
    end if
    call MPI_Comm_disconnect(inter, ierr)
    call check(inter == MPI_COMM_NULL, 'the disconnect')
    call MPI_Info_free(infos(1), ierr)
    call MPI_Info_free(infos(2), ierr)
    if (bad == 0) print '(a,i0)', 'PASS cross rank ', rank
  end subroutine manager

  subroutine worker()
    character(len=16) :: arg, app
    integer :: status
    call MPI_Comm_get_parent(inter, ierr)
    if (inter == MPI_COMM_NULL) then
      print '(a)', 'worker: FAIL no parent'
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    ! Rank 0 runs the first command, 1 and 2 the second, each with its own
    ! arguments and isthmus_env.
    call check(command_argument_count() == merge(2, 3, rank == 0), 'the argument count')
    call get_command_argument(2, arg)
    call check(arg == merge('first ', 'second', rank == 0), 'the second argument')
    if (rank > 0) then
      call get_command_argument(3, arg)
      call check(arg == 'two words', 'the third argument')
    end if
    call get_environment_variable('ISTHMUS_TEST_APP', app, status=status)
    call check(status == 0 .and. app == merge('one', 'two', rank == 0), 'isthmus_env')
    call check(size == 3, 'the world''s size')
    call exchange(.false.)
    call library_line(library)
    call MPI_Send(library, len(library), MPI_CHARACTER, 0, 10, inter, ierr)
    call MPI_Send(bad, 1, MPI_INTEGER, 0, 9, inter, ierr)
    call MPI_Comm_disconnect(inter, ierr)
    call MPI_Comm_get_parent(inter, ierr)
    if (inter /= MPI_COMM_NULL) print '(a)', 'worker: FAIL a parent after the disconnect'
    print '(a,i0,a,i0,a)', 'worker rank ', rank, ': ', bad, ' failed checks'
  end subroutine worker

end program spawn_cross
