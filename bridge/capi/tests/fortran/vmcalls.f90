! The virtual machine's calls from Fortran (the isthmus_vm module): spawns
! `sleep 30` as a job without MPI ("exec"), finds it in isthmus_jobs,
! subscribes to its exit, kills it and waits for the exit with
! isthmus_event_next; a spawn of a missing program fails with an MPI error
! that names the call. Prints "SPAWNED job=<id>", "EVENT job_exit job=<id>
! state=<s>", "ERROR <MPI_Error_string>" and "PASS vmcalls".
program vmcalls
  use mpi
  use isthmus_vm
  implicit none
  integer :: ierr, sub, count, i, n, bad
  integer(ISTHMUS_JOB_KIND) :: job, other
  type(isthmus_job_info) :: jobs(16)
  type(isthmus_event) :: event
  character(len=MPI_MAX_ERROR_STRING) :: message
  logical :: listed

  call MPI_Init(ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN, ierr)
  bad = 0
  call isthmus_spawn('sleep', (/ '30' /), 1, job, implementation='exec', ierror=ierr)
  if (ierr /= MPI_SUCCESS .or. job <= 0) then
    print '(a,i0)', 'FAIL isthmus_spawn returned ', ierr
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  print '(a,i0)', 'SPAWNED job=', job
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

  call isthmus_spawn('/no/such/program', ranks=1, job=other, implementation='exec', &
                     ierror=ierr)
  call MPI_Error_string(ierr, message, n, i)
  if (ierr /= MPI_SUCCESS) print '(a,a)', 'ERROR ', message(1:n)
  if (ierr == MPI_SUCCESS) bad = bad + 1
  if (bad == 0) print '(a)', 'PASS vmcalls'
  call MPI_Finalize(ierr)
end program vmcalls
