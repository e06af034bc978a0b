! Isthmus for `use mpi_f08` code: the calls of isthmus.h with
! type(MPI_Comm) handles and an optional ierror, as mpi_f08's own.
!
! Built per MPI implementation with its mpifort (the .mod files of
! Open MPI and MPICH differ); link the object (or libisthmus_f08.a) and
! libisthmus.so of the same implementation.
module isthmus_f08
  use, intrinsic :: iso_c_binding, only : c_char, c_int, c_double, c_size_t
  use mpi_f08, only : MPI_Comm
  implicit none
  private
  public :: isthmus_register, isthmus_leave, isthmus_intercomm_create, &
            isthmus_intercomm_create_timeout

  ! libisthmus's Fortran entry points (src/fortran.rs), with gfortran's
  ! convention spelled out: references, then each string's length.
  interface
    subroutine c_register(group, comm, handle, ierror, group_len) &
        bind(C, name="isthmus_register_")
      import :: c_char, c_int, c_size_t
      character(kind=c_char), intent(in) :: group(*)
      integer(c_int), intent(in) :: comm
      integer(c_int), intent(out) :: handle, ierror
      integer(c_size_t), value, intent(in) :: group_len
    end subroutine c_register

    subroutine c_leave(handle, ierror) bind(C, name="isthmus_leave_")
      import :: c_int
      integer(c_int), intent(in) :: handle
      integer(c_int), intent(out) :: ierror
    end subroutine c_leave

    subroutine c_intercomm_create(handle, remote_group, intercomm, ierror, remote_len) &
        bind(C, name="isthmus_intercomm_create_")
      import :: c_char, c_int, c_size_t
      integer(c_int), intent(in) :: handle
      character(kind=c_char), intent(in) :: remote_group(*)
      integer(c_int), intent(out) :: intercomm, ierror
      integer(c_size_t), value, intent(in) :: remote_len
    end subroutine c_intercomm_create

    subroutine c_intercomm_create_timeout(handle, remote_group, seconds, intercomm, ierror, &
        remote_len) bind(C, name="isthmus_intercomm_create_timeout_")
      import :: c_char, c_int, c_double, c_size_t
      integer(c_int), intent(in) :: handle
      character(kind=c_char), intent(in) :: remote_group(*)
      real(c_double), intent(in) :: seconds
      integer(c_int), intent(out) :: intercomm, ierror
      integer(c_size_t), value, intent(in) :: remote_len
    end subroutine c_intercomm_create_timeout
  end interface

contains

  !> Registers comm under the group name (collective over comm).
  subroutine isthmus_register(group, comm, handle, ierror)
    character(len=*), intent(in) :: group
    type(MPI_Comm), intent(in) :: comm
    integer, intent(out) :: handle
    integer, optional, intent(out) :: ierror
    integer(c_int) :: h, e
    call c_register(group, comm%MPI_VAL, h, e, len(group, kind=c_size_t))
    handle = h
    if (present(ierror)) ierror = e
  end subroutine isthmus_register

  !> Leaves the group (collective over the registered communicator).
  subroutine isthmus_leave(handle, ierror)
    integer, intent(in) :: handle
    integer, optional, intent(out) :: ierror
    integer(c_int) :: e
    call c_leave(handle, e)
    if (present(ierror)) ierror = e
  end subroutine isthmus_leave

  !> Forms an intercommunicator with the job registered as remote_group.
  subroutine isthmus_intercomm_create(handle, remote_group, intercomm, ierror)
    integer, intent(in) :: handle
    character(len=*), intent(in) :: remote_group
    type(MPI_Comm), intent(out) :: intercomm
    integer, optional, intent(out) :: ierror
    integer(c_int) :: c, e
    call c_intercomm_create(handle, remote_group, c, e, len(remote_group, kind=c_size_t))
    intercomm%MPI_VAL = c
    if (present(ierror)) ierror = e
  end subroutine isthmus_intercomm_create

  !> As isthmus_intercomm_create, with a deadline in seconds.
  subroutine isthmus_intercomm_create_timeout(handle, remote_group, seconds, intercomm, ierror)
    integer, intent(in) :: handle
    character(len=*), intent(in) :: remote_group
    double precision, intent(in) :: seconds
    type(MPI_Comm), intent(out) :: intercomm
    integer, optional, intent(out) :: ierror
    integer(c_int) :: c, e
    real(c_double) :: s
    s = seconds
    call c_intercomm_create_timeout(handle, remote_group, s, c, e, &
                                    len(remote_group, kind=c_size_t))
    intercomm%MPI_VAL = c
    if (present(ierror)) ierror = e
  end subroutine isthmus_intercomm_create_timeout
end module isthmus_f08
