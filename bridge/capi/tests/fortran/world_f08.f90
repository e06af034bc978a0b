! One MPI_COMM_WORLD across implementations (ISTHMUS_WORLD), from Fortran's
! `use mpi_f08`, as tests/fortran/world.F90 from `use mpi`: the world of
! both parts, its size and this rank, the part's MPI_APPNUM, a send across
! the parts (world rank 0 to the last rank and back) and an Allreduce.
! Usage: world_f08 PART0_SIZE. Prints "PASS f08 world rank R of N" per rank.
program world_f08
  use mpi_f08
  implicit none
  integer :: rank, nprocs, n0, x, total, last
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  logical :: flag
  type(MPI_Status) :: st
  character(len=16) :: arg

  call MPI_Init()
  call get_command_argument(1, arg)
  read (arg, *) n0
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  if (nprocs /= 4 .or. n0 /= 2) call fail('world size', nprocs)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag)
  if (.not. flag) call fail('no MPI_APPNUM', 0)
  if (rank < n0 .neqv. appnum == 0) call fail('MPI_APPNUM', int(appnum))
  last = nprocs - 1
  if (rank == 0) then
    x = 42
    call MPI_Send(x, 1, MPI_INTEGER, last, 5, MPI_COMM_WORLD)
    call MPI_Recv(x, 1, MPI_INTEGER, last, 6, MPI_COMM_WORLD, st)
    if (x /= 43 .or. st%MPI_SOURCE /= last) call fail('reply across', x)
  else if (rank == last) then
    call MPI_Recv(x, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, st)
    if (x /= 42 .or. st%MPI_SOURCE /= 0) call fail('send across', x)
    x = 43
    call MPI_Send(x, 1, MPI_INTEGER, 0, 6, MPI_COMM_WORLD)
  end if
  call MPI_Allreduce(rank + 1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (total /= nprocs * (nprocs + 1) / 2) call fail('allreduce', total)
  print '(a,i0,a,i0)', 'PASS f08 world rank ', rank, ' of ', nprocs
  call MPI_Finalize()

contains

  subroutine fail(what, got)
    character(len=*), intent(in) :: what
    integer, intent(in) :: got
    print '(a,i0,a,a,a,i0)', 'rank ', rank, ': FAIL ', what, ': ', got
    call MPI_Abort(MPI_COMM_WORLD, 2)
  end subroutine fail
end program world_f08
