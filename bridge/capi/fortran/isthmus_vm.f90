! The virtual machine's calls of isthmus.h for Fortran (mpif.h, use mpi
! and use mpi_f08 code alike): spawn, kill and signal a job, list jobs and
! hosts, add and delete hosts, and notifications, taken with
! isthmus_event_next or passed to a callback of the program
! (isthmus_subscribe_callback). Thin wrappers over the C calls (bind(C)): Fortran
! strings lose their trailing blanks and get a NUL; an absent or blank
! optional string is C's NULL. Every call's ierror (optional) is the C
! call's MPI error code (MPI_SUCCESS is 0): a failure is raised on
! MPI_COMM_SELF first, as in C, so set MPI_ERRORS_RETURN on it to get the
! code back; MPI_Error_string names the call and the reason.
! A program that asks for neither form is never interrupted: no signal,
! no callback.
!
! It uses no MPI module: build it with the implementation's mpifort (or
! the gfortran it wraps) and link libisthmus.so of that implementation.
module isthmus_vm
  use, intrinsic :: iso_c_binding, only : c_char, c_int, c_int64_t, c_long_long, c_double, &
                                          c_null_char, c_ptr, c_null_ptr, c_loc, c_funptr, &
                                          c_funloc
  implicit none
  private
  public :: isthmus_spawn, isthmus_kill, isthmus_signal, isthmus_jobs, isthmus_hosts, &
            isthmus_add_host, isthmus_delete_host, isthmus_subscribe, isthmus_event_next, &
            isthmus_unsubscribe, isthmus_string, isthmus_subscribe_callback
  public :: isthmus_job_info, isthmus_host_info, isthmus_event, isthmus_event_function

  !> A job of the virtual machine (Isthmus_Job).
  integer, parameter, public :: ISTHMUS_JOB_KIND = c_int64_t

  integer, parameter, public :: ISTHMUS_JOB_STARTING = 0, ISTHMUS_JOB_RUNNING = 1, &
      ISTHMUS_JOB_EXITED = 2, ISTHMUS_JOB_FAILED = 3, ISTHMUS_JOB_KILLED = 4, &
      ISTHMUS_JOB_LOST = 5
  integer, parameter, public :: ISTHMUS_EXIT_NONE = 0, ISTHMUS_EXIT_CODE = 1, &
      ISTHMUS_EXIT_SIGNAL = 2
  integer, parameter, public :: ISTHMUS_EVENT_NONE = 0, ISTHMUS_EVENT_HOST_ADDED = 1, &
      ISTHMUS_EVENT_HOST_DELETED = 2, ISTHMUS_EVENT_HOST_FAILED = 4, &
      ISTHMUS_EVENT_TASK_EXIT = 8, ISTHMUS_EVENT_JOB_EXIT = 16, ISTHMUS_EVENT_GROUP = 32, &
      ISTHMUS_EVENT_ALL = 63, ISTHMUS_EVENT_LOST = 256, ISTHMUS_EVENT_ENDED = 512
  integer, parameter, public :: ISTHMUS_GROUP_JOINED = 1, ISTHMUS_GROUP_LEFT = 2, &
      ISTHMUS_GROUP_FROZEN = 3, ISTHMUS_GROUP_DESTROYED = 4, ISTHMUS_GROUP_MEMBER_DIED = 5

  !> Isthmus_Job_info: strings are NUL-terminated (see isthmus_string).
  type, bind(C) :: isthmus_job_info
    integer(c_int64_t) :: id
    integer(c_int) :: ranks, running, state, exit_kind, exit_value
    character(kind=c_char) :: implementation(32)
    character(kind=c_char) :: host(256)
    character(kind=c_char) :: program(1024)
  end type isthmus_job_info

  !> Isthmus_Host_info.
  type, bind(C) :: isthmus_host_info
    character(kind=c_char) :: name(256)
    integer(c_int) :: slots, slots_used, jobs, up
    character(kind=c_char) :: taskers(256)
  end type isthmus_host_info

  !> Isthmus_Event.
  type, bind(C) :: isthmus_event
    integer(c_int) :: kind
    integer(c_int64_t) :: job
    integer(c_int) :: rank, exit_kind, exit_value, state, group_change, instance, size
    integer(c_long_long) :: lost
    character(kind=c_char) :: host(256)
    character(kind=c_char) :: group(256)
    character(kind=c_char) :: reason(512)
  end type isthmus_event

  abstract interface
    !> A notification callback (Isthmus_Event_function), for
    !> isthmus_subscribe_callback: a bind(C) subroutine of the program,
    !> called with each event of the subscription and the subscription's
    !> `arg`, in order, on a thread of the library (one per subscription;
    !> not the program's). It must be safe on that thread: it may record
    !> the event (in VOLATILE variables, say, which the program reads) and
    !> call isthmus_unsubscribe; it may call MPI only if MPI was initialised
    !> with MPI_THREAD_MULTIPLE. The event is valid during the call only.
    subroutine isthmus_event_function(event, arg) bind(C)
      import :: isthmus_event, c_ptr
      type(isthmus_event), intent(in) :: event
      type(c_ptr), value :: arg
    end subroutine isthmus_event_function
  end interface

  interface
    integer(c_int) function c_spawn(program, argv, ranks, implementation, host, env, job) &
        bind(C, name="Isthmus_Spawn")
      import :: c_char, c_int, c_int64_t, c_ptr
      character(kind=c_char), intent(in) :: program(*)
      type(c_ptr), value :: argv, implementation, host, env
      integer(c_int), value :: ranks
      integer(c_int64_t), intent(out) :: job
    end function c_spawn

    integer(c_int) function c_kill(job) bind(C, name="Isthmus_Kill")
      import :: c_int, c_int64_t
      integer(c_int64_t), value :: job
    end function c_kill

    integer(c_int) function c_signal(job, signal, rank) bind(C, name="Isthmus_Signal")
      import :: c_int, c_int64_t
      integer(c_int64_t), value :: job
      integer(c_int), value :: signal, rank
    end function c_signal

    integer(c_int) function c_jobs(all, jobs, max, count) bind(C, name="Isthmus_Jobs")
      import :: c_int, c_ptr
      integer(c_int), value :: all, max
      type(c_ptr), value :: jobs
      integer(c_int), intent(out) :: count
    end function c_jobs

    integer(c_int) function c_hosts(hosts, max, count) bind(C, name="Isthmus_Hosts")
      import :: c_int, c_ptr
      type(c_ptr), value :: hosts
      integer(c_int), value :: max
      integer(c_int), intent(out) :: count
    end function c_hosts

    integer(c_int) function c_add_host(name, slots) bind(C, name="Isthmus_Add_host")
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: slots
    end function c_add_host

    integer(c_int) function c_delete_host(name, jobs_lost) bind(C, name="Isthmus_Delete_host")
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), intent(out) :: jobs_lost
    end function c_delete_host

    integer(c_int) function c_subscribe(kinds, jobs, njobs, group, subscription) &
        bind(C, name="Isthmus_Subscribe")
      import :: c_int, c_ptr
      integer(c_int), value :: kinds, njobs
      type(c_ptr), value :: jobs, group
      integer(c_int), intent(out) :: subscription
    end function c_subscribe

    integer(c_int) function c_subscribe_callback(kinds, jobs, njobs, group, callback, arg, &
                                                 subscription) &
        bind(C, name="Isthmus_Subscribe_callback")
      import :: c_int, c_ptr, c_funptr
      integer(c_int), value :: kinds, njobs
      type(c_ptr), value :: jobs, group, arg
      type(c_funptr), value :: callback
      integer(c_int), intent(out) :: subscription
    end function c_subscribe_callback

    integer(c_int) function c_event_next(subscription, timeout, event) &
        bind(C, name="Isthmus_Event_next")
      import :: c_int, c_double, isthmus_event
      integer(c_int), value :: subscription
      real(c_double), value :: timeout
      type(isthmus_event), intent(out) :: event
    end function c_event_next

    integer(c_int) function c_unsubscribe(subscription) bind(C, name="Isthmus_Unsubscribe")
      import :: c_int
      integer(c_int), value :: subscription
    end function c_unsubscribe
  end interface

  !> A Fortran string as C's: trailing blanks cut, a NUL after.
  type :: c_text
    character(kind=c_char, len=:), allocatable :: s
  end type c_text

contains

  function c_of(s) result(t)
    character(len=*), intent(in) :: s
    type(c_text) :: t
    t%s = trim(s) // c_null_char
  end function c_of

  !> An optional string as a C pointer: NULL when absent or blank. The
  !> string is kept in t, which must outlive the call.
  function ptr_of(s, t) result(p)
    character(len=*), intent(in), optional :: s
    type(c_text), target, intent(inout) :: t
    type(c_ptr) :: p
    p = c_null_ptr
    if (.not. present(s)) return
    if (len_trim(s) == 0) return
    t%s = trim(s) // c_null_char
    p = c_loc(t%s)
  end function ptr_of

  !> A NUL-terminated character array of isthmus.h's structures (a job's
  !> program, an event's reason, ...) as a Fortran string.
  function isthmus_string(chars) result(s)
    character(kind=c_char), intent(in) :: chars(:)
    character(len=:), allocatable :: s
    integer :: i, n
    n = size(chars)
    do i = 1, size(chars)
      if (chars(i) == c_null_char) then
        n = i - 1
        exit
      end if
    end do
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function isthmus_string

  !> Starts `ranks` processes of `program` (arguments `argv`, each without
  !> its trailing blanks; all of them are passed) as one job of the
  !> virtual machine; `implementation` ("openmpi", "mpich", "exec", ...),
  !> `host` and `env` (NAME=VALUE;... as the info key isthmus_env) as in C.
  subroutine isthmus_spawn(program, argv, ranks, job, implementation, host, env, ierror)
    character(len=*), intent(in) :: program
    character(len=*), intent(in), optional :: argv(:)
    integer, intent(in) :: ranks
    integer(c_int64_t), intent(out) :: job
    character(len=*), intent(in), optional :: implementation, host, env
    integer, optional, intent(out) :: ierror
    type(c_text), target, allocatable :: args(:)
    type(c_ptr), allocatable, target :: c_args(:)
    type(c_text), target :: i_t, h_t, e_t
    type(c_text) :: p_t
    type(c_ptr) :: argv_p
    integer :: i, n
    integer(c_int) :: rc
    n = 0
    if (present(argv)) n = size(argv)
    allocate(args(n), c_args(n + 1))
    do i = 1, n
      args(i)%s = trim(argv(i)) // c_null_char
      c_args(i) = c_loc(args(i)%s)
    end do
    c_args(n + 1) = c_null_ptr
    argv_p = c_null_ptr
    if (n > 0) argv_p = c_loc(c_args)
    p_t = c_of(program)
    job = -1
    rc = c_spawn(p_t%s, argv_p, int(ranks, c_int), ptr_of(implementation, i_t), &
                 ptr_of(host, h_t), ptr_of(env, e_t), job)
    if (present(ierror)) ierror = rc
  end subroutine isthmus_spawn

  !> Kills every rank of a job.
  subroutine isthmus_kill(job, ierror)
    integer(c_int64_t), intent(in) :: job
    integer, optional, intent(out) :: ierror
    integer(c_int) :: rc
    rc = c_kill(job)
    if (present(ierror)) ierror = rc
  end subroutine isthmus_kill

  !> Sends `signal` to a job's ranks (rank < 0: every rank).
  subroutine isthmus_signal(job, signal, rank, ierror)
    integer(c_int64_t), intent(in) :: job
    integer, intent(in) :: signal, rank
    integer, optional, intent(out) :: ierror
    integer(c_int) :: rc
    rc = c_signal(job, int(signal, c_int), int(rank, c_int))
    if (present(ierror)) ierror = rc
  end subroutine isthmus_signal

  !> This user's jobs holding slots (all: also those ended recently): fills
  !> up to size(jobs) entries; count is how many there are (maybe more).
  subroutine isthmus_jobs(all, jobs, count, ierror)
    logical, intent(in) :: all
    type(isthmus_job_info), target, intent(inout) :: jobs(:)
    integer, intent(out) :: count
    integer, optional, intent(out) :: ierror
    integer(c_int) :: rc, n, a
    type(c_ptr) :: p
    a = 0
    if (all) a = 1
    p = c_null_ptr
    if (size(jobs) > 0) p = c_loc(jobs(1))
    rc = c_jobs(a, p, int(size(jobs), c_int), n)
    count = n
    if (present(ierror)) ierror = rc
  end subroutine isthmus_jobs

  !> The virtual machine's hosts, as isthmus_jobs fills.
  subroutine isthmus_hosts(hosts, count, ierror)
    type(isthmus_host_info), target, intent(inout) :: hosts(:)
    integer, intent(out) :: count
    integer, optional, intent(out) :: ierror
    integer(c_int) :: rc, n
    type(c_ptr) :: p
    p = c_null_ptr
    if (size(hosts) > 0) p = c_loc(hosts(1))
    rc = c_hosts(p, int(size(hosts), c_int), n)
    count = n
    if (present(ierror)) ierror = rc
  end subroutine isthmus_hosts

  !> Adds a host of `slots` slots (operators only).
  subroutine isthmus_add_host(name, slots, ierror)
    character(len=*), intent(in) :: name
    integer, intent(in) :: slots
    integer, optional, intent(out) :: ierror
    type(c_text) :: t
    integer(c_int) :: rc
    t = c_of(name)
    rc = c_add_host(t%s, int(slots, c_int))
    if (present(ierror)) ierror = rc
  end subroutine isthmus_add_host

  !> Deletes a host (operators only); jobs_lost: how many of its jobs.
  subroutine isthmus_delete_host(name, jobs_lost, ierror)
    character(len=*), intent(in) :: name
    integer, optional, intent(out) :: jobs_lost
    integer, optional, intent(out) :: ierror
    type(c_text) :: t
    integer(c_int) :: rc, lost
    t = c_of(name)
    lost = 0
    rc = c_delete_host(t%s, lost)
    if (present(jobs_lost)) jobs_lost = lost
    if (present(ierror)) ierror = rc
  end subroutine isthmus_delete_host

  !> Subscribes to the kinds in `kinds` (ISTHMUS_EVENT_* summed): of the
  !> jobs in `jobs` only (absent or empty: every job of this user), of
  !> group `group` only (absent or blank: every group); the events are
  !> taken with isthmus_event_next.
  subroutine isthmus_subscribe(kinds, subscription, jobs, group, ierror)
    integer, intent(in) :: kinds
    integer, intent(out) :: subscription
    integer(c_int64_t), intent(in), optional :: jobs(:)
    character(len=*), intent(in), optional :: group
    integer, optional, intent(out) :: ierror
    integer(c_int64_t), allocatable, target :: copy(:)
    type(c_text), target :: g_t
    type(c_ptr) :: p
    integer(c_int) :: rc, n, s
    call jobs_of(jobs, copy, p, n)
    s = -1
    rc = c_subscribe(int(kinds, c_int), p, n, ptr_of(group, g_t), s)
    subscription = s
    if (present(ierror)) ierror = rc
  end subroutine isthmus_subscribe

  !> Subscribes as isthmus_subscribe does, but each event is passed to
  !> `callback` (see isthmus_event_function) with `arg` (absent: a null
  !> pointer), on a thread of the library, until isthmus_unsubscribe (which
  !> returns once that thread has stopped, unless called from the callback)
  !> or MPI_Finalize. isthmus_event_next does not take these events.
  subroutine isthmus_subscribe_callback(kinds, callback, subscription, jobs, group, arg, ierror)
    integer, intent(in) :: kinds
    procedure(isthmus_event_function) :: callback
    integer, intent(out) :: subscription
    integer(c_int64_t), intent(in), optional :: jobs(:)
    character(len=*), intent(in), optional :: group
    type(c_ptr), intent(in), optional :: arg
    integer, optional, intent(out) :: ierror
    integer(c_int64_t), allocatable, target :: copy(:)
    type(c_text), target :: g_t
    type(c_ptr) :: p, a
    integer(c_int) :: rc, n, s
    call jobs_of(jobs, copy, p, n)
    a = c_null_ptr
    if (present(arg)) a = arg
    s = -1
    rc = c_subscribe_callback(int(kinds, c_int), p, n, ptr_of(group, g_t), c_funloc(callback), &
                              a, s)
    subscription = s
    if (present(ierror)) ierror = rc
  end subroutine isthmus_subscribe_callback

  !> An optional list of jobs as C's array and count: a contiguous copy
  !> (`jobs` may be a strided section), kept in `copy`, which must outlive
  !> the call; a null pointer and 0 when absent.
  subroutine jobs_of(jobs, copy, p, n)
    integer(c_int64_t), intent(in), optional :: jobs(:)
    integer(c_int64_t), allocatable, target, intent(inout) :: copy(:)
    type(c_ptr), intent(out) :: p
    integer(c_int), intent(out) :: n
    n = 0
    p = c_null_ptr
    if (.not. present(jobs)) return
    n = int(size(jobs), c_int)
    allocate(copy(n))
    copy(:) = jobs(:)
    if (n > 0) p = c_loc(copy(1))
  end subroutine jobs_of

  !> The next event of the subscription, waiting up to `timeout` seconds
  !> (0: only look); event%kind is ISTHMUS_EVENT_NONE if none came.
  subroutine isthmus_event_next(subscription, timeout, event, ierror)
    integer, intent(in) :: subscription
    double precision, intent(in) :: timeout
    type(isthmus_event), intent(out) :: event
    integer, optional, intent(out) :: ierror
    integer(c_int) :: rc
    rc = c_event_next(int(subscription, c_int), real(timeout, c_double), event)
    if (present(ierror)) ierror = rc
  end subroutine isthmus_event_next

  !> Ends a subscription.
  subroutine isthmus_unsubscribe(subscription, ierror)
    integer, intent(in) :: subscription
    integer, optional, intent(out) :: ierror
    integer(c_int) :: rc
    rc = c_unsubscribe(int(subscription, c_int))
    if (present(ierror)) ierror = rc
  end subroutine isthmus_unsubscribe

end module isthmus_vm
