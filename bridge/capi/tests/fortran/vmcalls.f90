! The virtual machine's calls from Fortran (the isthmus_vm module): spawns
! `sleep 30` as a job without MPI ("exec"), finds it in isthmus_jobs,
! subscribes to its exit, kills it and waits for the exit with
! isthmus_event_next; then the callback form: spawns a second `sleep 30`,
! subscribes to its exit with isthmus_subscribe_callback (a bind(C)
! subroutine and an argument pointing to an integer of the program), kills
! it and waits for the callback to have recorded the exit; a spawn of a
! missing program fails with an MPI error that names the call. Prints
! "SPAWNED job=<id>", "EVENT job_exit job=<id> state=<s>", "SPAWNED
! callback job=<id>", "CALLBACK job_exit job=<id> state=<s> arg=<n>
! calls=<c>", "ERROR <MPI_Error_string>" and "PASS vmcalls".

! What the callback saw, read by the program: the callback runs on a
! thread of the library, so the variables are VOLATILE and `seen` is set
! last.
module vmcalls_callback
  use, intrinsic :: iso_c_binding, only : c_int, c_int64_t, c_ptr, c_f_pointer
  use isthmus_vm, only : isthmus_event
  implicit none
  integer, volatile :: seen = 0, seen_kind = 0, seen_state = -1, seen_arg = 0
  integer(c_int64_t), volatile :: seen_job = -1

contains

  !> Records the event and the integer its argument points to.
  subroutine on_event(event, arg) bind(C)
    type(isthmus_event), intent(in) :: event
    type(c_ptr), value :: arg
    integer(c_int), pointer :: tag
    call c_f_pointer(arg, tag)
    seen_kind = event%kind
    seen_job = event%job
    seen_state = event%state
    seen_arg = tag
    seen = seen + 1
  end subroutine on_event
end module vmcalls_callback

program vmcalls
  use, intrinsic :: iso_c_binding, only : c_int, c_loc
  use mpi
  use isthmus_vm
  use vmcalls_callback
  implicit none
  integer :: ierr, sub, count, i, n, bad
  integer(c_int), target :: tag
  integer(ISTHMUS_JOB_KIND) :: job, other, worker
  type(isthmus_job_info) :: jobs(16)
  type(isthmus_event) :: event
  character(len=MPI_MAX_ERROR_STRING) :: message
  logical :: listed

  call MPI_Init(ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN, ierr)
  bad = 0
  job = sleeper('SPAWNED job=')
  call isthmus_subscribe(ISTHMUS_EVENT_JOB_EXIT, sub, jobs=(/ job /), ierror=ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  call isthmus_jobs(.false., jobs, count, ierr)
  listed = .false.
  do i = 1, min(count, size(jobs))
    if (jobs(i)%id == job .and. isthmus_string(jobs(i)%implementation) == 'exec') listed = .true.
  end do
  if (ierr /= MPI_SUCCESS .or. .not. listed) then
    print '(a)', 'FAIL the job is not listed'
    bad = bad + 1
  end if
  call isthmus_kill(job, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 1, 30
    call isthmus_event_next(sub, 1d0, event, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    if (event%kind == ISTHMUS_EVENT_JOB_EXIT) then
      print '(a,i0,a,i0)', 'EVENT job_exit job=', event%job, ' state=', event%state
      exit
    end if
  end do
  call isthmus_unsubscribe(sub, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1

  ! The callback form.
  worker = sleeper('SPAWNED callback job=')
  tag = 4242
  call isthmus_subscribe_callback(ISTHMUS_EVENT_JOB_EXIT, on_event, sub, jobs=(/ worker /), &
                                  arg=c_loc(tag), ierror=ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if (seen /= 0) then
    print '(a)', 'FAIL the callback was called before anything happened'
    bad = bad + 1
  end if
  call isthmus_kill(worker, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 1, 300
    if (seen > 0) exit
    call sleep_ms(100)
  end do
  call isthmus_unsubscribe(sub, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if (seen > 0) then
    print '(a,i0,a,i0,a,i0,a,i0)', 'CALLBACK job_exit job=', seen_job, ' state=', seen_state, &
        ' arg=', seen_arg, ' calls=', seen
  end if
  if (seen /= 1 .or. seen_kind /= ISTHMUS_EVENT_JOB_EXIT .or. seen_job /= worker) then
    print '(a,i0)', 'FAIL the callback did not see the worker''s exit: calls=', seen
    bad = bad + 1
  end if

  call isthmus_spawn('/no/such/program', ranks=1, job=other, implementation='exec', &
                     ierror=ierr)
  call MPI_Error_string(ierr, message, n, i)
  if (ierr /= MPI_SUCCESS) print '(a,a)', 'ERROR ', message(1:n)
  if (ierr == MPI_SUCCESS) bad = bad + 1
  if (bad == 0) print '(a)', 'PASS vmcalls'
  call MPI_Finalize(ierr)

contains

  !> Spawns `sleep 30` as a job without MPI and prints `what` and its id;
  !> aborts if it cannot.
  function sleeper(what) result(id)
    character(len=*), intent(in) :: what
    integer(ISTHMUS_JOB_KIND) :: id
    integer :: rc
    call isthmus_spawn('sleep', (/ '30' /), 1, id, implementation='exec', ierror=rc)
    if (rc /= MPI_SUCCESS .or. id <= 0) then
      print '(a,i0)', 'FAIL isthmus_spawn returned ', rc
      call MPI_Abort(MPI_COMM_WORLD, 1, rc)
    end if
    print '(a,i0)', what, id
  end function sleeper

  !> Waits `ms` milliseconds (C's usleep: no library call that could take
  !> events; the callback comes on its own thread).
  subroutine sleep_ms(ms)
    integer, intent(in) :: ms
    interface
      integer(c_int) function usleep(us) bind(C, name="usleep")
        import :: c_int
        integer(c_int), value :: us
      end function usleep
    end interface
    integer(c_int) :: rc
    rc = usleep(int(ms * 1000, c_int))
  end subroutine sleep_ms
end program vmcalls
