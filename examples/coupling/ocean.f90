! The ocean of the coupling demo: a Fortran MPI program (built with
! mpifort.openmpi) that joins the atmosphere (a C program built with
! mpicc.mpich, started separately) through Isthmus, then exchanges
! boundary fields with it every step using plain MPI calls.
!
! Each rank owns NX cells of the sea surface; rank r of the ocean talks to
! rank r of the atmosphere. Every step it sends its sea surface
! temperature (SST) and receives the air temperature above it, with
! MPI_Isend/MPI_Irecv and MPI_Waitall on the Isthmus intercommunicator,
! prints what it received and the heat flux into the ocean, and checks
! the received values against the atmosphere's formula.
!
!   cell g (global, 1-based) at step s:  SST   = 15 + 0.5 g + 0.1 s
!                                        T_air = 20 - 0.25 g + 0.2 s
!
! Usage: ocean [steps]  (default 3); ISTHMUS_VMD names the vmd.
program ocean
  use mpi
  implicit none
  integer, parameter :: nx = 4
  integer :: ierr, rank, nprocs, handle, inter, rsize, steps, s, i, g
  integer :: reqs(2)
  character(len=16) :: arg
  double precision :: sst(nx), tair(nx), flux(nx), expect

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  steps = 3
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) steps
  end if

  ! The three Isthmus calls: join the virtual machine as "ocean", meet
  ! "atmosphere" (waiting for it to start, up to 120 s).
  call isthmus_register('ocean', MPI_COMM_WORLD, handle, ierr)
  call isthmus_intercomm_create_timeout(handle, 'atmosphere', 120d0, inter, ierr)
  call MPI_Comm_remote_size(inter, rsize, ierr)
  if (rsize /= nprocs) then
    print '(a,i0,a,i0,a)', 'ocean: the atmosphere has ', rsize, ' ranks, the ocean ', nprocs, &
          '; start both with the same number'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  if (rank == 0) print '(a,i0,a)', 'ocean: coupled with the atmosphere (', rsize, ' ranks)'

  do s = 1, steps
    do i = 1, nx
      g = rank*nx + i
      sst(i) = 15d0 + 0.5d0*g + 0.1d0*s
    end do
    ! Plain MPI from here on: the same calls as within one job.
    call MPI_Irecv(tair, nx, MPI_DOUBLE_PRECISION, rank, s, inter, reqs(1), ierr)
    call MPI_Isend(sst, nx, MPI_DOUBLE_PRECISION, rank, s, inter, reqs(2), ierr)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    do i = 1, nx
      g = rank*nx + i
      expect = 20d0 - 0.25d0*g + 0.2d0*s
      if (abs(tair(i) - expect) > 1d-9) then
        print '(a,i0,a,i0,a,f8.3,a,f8.3)', 'ocean rank ', rank, ': WRONG air temperature at cell ', &
              g, ': ', tair(i), ' instead of ', expect
        call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      end if
      flux(i) = 10d0*(tair(i) - sst(i))
    end do
    print '(a,i0,a,i0,a,4f8.2,a,4f8.1)', 'ocean rank ', rank, ' step ', s, &
          ' received air temperature', tair, ' -> heat flux', flux
  end do

  call MPI_Comm_free(inter, ierr)
  call isthmus_leave(handle, ierr)
  if (rank == 0) print '(a)', 'ocean: done'
  call MPI_Finalize(ierr)
end program ocean
