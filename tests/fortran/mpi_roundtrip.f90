! factz's MPI entry points from Fortran (`use mpi` handles, module factz):
!
!   mpirun -np N mpi_roundtrip particles RAW.f32 N B BOX XI OUT.f32
!   mpirun -np N mpi_roundtrip field     RAW.f32 NY NX REL OUT.f32
!   mpirun -np N mpi_roundtrip field-at  RAW.f32 NY NX REL OUT.f32
!
! particles: each rank takes slab [r N / size, (r + 1) N / size) of RAW (sorted
! by the caller) and compresses it collectively with b, the periodic box and
! the absolute bound XI. field: RAW is u then v (NY x NX, row-major); each rank
! takes rows [r NY / size, (r + 1) NY / size) under the relative bound REL
! (field-at: factz_field_compress_mpi_at, told where its rows start).
! Each rank decodes its own stream, and rank 0 gathers the decoded union into
! OUT for the test's oracle.
program mpi_roundtrip
  use mpi
  use factz
  use iso_c_binding
  implicit none
  integer :: ierr, rank, nranks, st
  character(len=4096) :: kind, raw, out

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call get_command_argument(1, kind)
  call get_command_argument(2, raw)
  if (kind == 'particles') then
    call get_command_argument(7, out)
    call particles()
  else if (kind == 'field' .or. kind == 'field-at') then
    call get_command_argument(6, out)
    call field(kind == 'field-at')
  else
    call die('usage: mpi_roundtrip particles|field ...')
  end if
  call MPI_Finalize(ierr)

contains

  subroutine die(why)
    character(len=*), intent(in) :: why
    write (0, '(a, i0, a, a)') 'mpi_roundtrip: rank ', rank, ': ', why
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine

  integer function arg_int(k)
    integer, intent(in) :: k
    character(len=64) :: s
    call get_command_argument(k, s)
    read (s, *) arg_int
  end function

  real(c_double) function arg_real(k)
    integer, intent(in) :: k
    character(len=64) :: s
    call get_command_argument(k, s)
    read (s, *) arg_real
  end function

  subroutine read_raw(values)
    real(c_float), intent(out) :: values(:)
    integer :: u
    open (newunit=u, file=trim(raw), access='stream', form='unformatted', status='old', &
          action='read')
    read (u) values
    close (u)
  end subroutine

  subroutine write_raw(values)
    real(c_float), intent(in) :: values(:)
    integer :: u
    open (newunit=u, file=trim(out), access='stream', form='unformatted', status='replace', &
          action='write')
    write (u) values
    close (u)
  end subroutine

  ! Gathers each rank's `mine` onto rank 0's `all`, in rank order.
  subroutine gather(mine, all)
    real(c_float), intent(in) :: mine(:)
    real(c_float), intent(inout) :: all(:)
    integer :: counts(nranks), displs(nranks), r
    call MPI_Gather(size(mine), 1, MPI_INTEGER, counts, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    displs(1) = 0
    do r = 2, nranks
      displs(r) = displs(r - 1) + counts(r - 1)
    end do
    call MPI_Gatherv(mine, size(mine), MPI_REAL, all, counts, displs, MPI_REAL, 0, &
                     MPI_COMM_WORLD, ierr)
  end subroutine

  subroutine particles()
    type(factz_particles_config) :: cfg
    integer :: n, lo, hi
    integer(c_size_t) :: cap, len, mine
    real(c_float), allocatable :: all(:), dec(:)
    integer(c_int8_t), allocatable :: stream(:)
    n = arg_int(3)
    allocate (all(3 * n))
    call read_raw(all)
    lo = int(int(rank, c_int64_t) * n / nranks)
    hi = int(int(rank + 1, c_int64_t) * n / nranks)
    mine = int(hi - lo, c_size_t)
    cfg = factz_particles_defaults()
    cfg%bound_kind = FACTZ_BOUND_ABS
    cfg%bound = arg_real(6)
    cfg%linking_kind = FACTZ_LINK_LENGTH
    cfg%linking = arg_real(4)
    cfg%box_side = arg_real(5)
    if (factz_particles_max_compressed_size(mine, cap) /= FACTZ_OK) call die('max size')
    allocate (stream(cap), dec(3 * mine))
    st = factz_particles_compress_mpi(MPI_COMM_WORLD, all(3 * lo + 1:), mine, cfg, stream, cap, &
                                      len)
    if (st /= FACTZ_OK) call die('compress: '//factz_error_message())
    if (factz_particles_decompress(stream, len, dec, mine) /= FACTZ_OK) call die('decompress')
    call gather(dec, all)
    if (rank == 0) then
      call write_raw(all)
      print '(a, i0, a, i0, a, i0, a)', 'rank 0: ', mine, ' of ', n, ' particles, stream ', &
        len, ' bytes (Fortran)'
    end if
  end subroutine

  subroutine field(at)
    logical, intent(in) :: at
    type(factz_field_config) :: cfg
    integer :: ny, nx, j0, j1, c
    integer(c_size_t) :: cap, len, rows
    real(c_float), allocatable :: all(:), u(:), v(:), both(:)
    integer(c_int8_t), allocatable :: stream(:)
    ny = arg_int(3)
    nx = arg_int(4)
    allocate (all(2 * ny * nx))
    call read_raw(all)
    j0 = int(int(rank, c_int64_t) * ny / nranks)
    j1 = int(int(rank + 1, c_int64_t) * ny / nranks)
    rows = int(j1 - j0, c_size_t)
    u = all(j0 * nx + 1:j1 * nx)
    v = all(ny * nx + j0 * nx + 1:ny * nx + j1 * nx)
    cfg = factz_field_defaults()
    cfg%bound_kind = FACTZ_BOUND_REL
    cfg%bound = arg_real(5)
    if (factz_field_max_compressed_size(rows, int(nx, c_size_t), cap) /= FACTZ_OK) &
      call die('max size')
    allocate (stream(cap))
    if (at) then
      st = factz_field_compress_mpi_at(MPI_COMM_WORLD, cfg, u, v, rows, int(nx, c_size_t), &
                                       int(j0, c_size_t), 0_c_size_t, stream, cap, len)
    else
      st = factz_field_compress_mpi(MPI_COMM_WORLD, cfg, u, v, rows, int(nx, c_size_t), stream, &
                                    cap, len)
    end if
    if (st /= FACTZ_OK) call die('compress: '//factz_error_message())
    if (factz_field_decompress(stream, len, u, v, rows, int(nx, c_size_t)) /= FACTZ_OK) &
      call die('decompress')
    ! u blocks then v blocks, each gathered in rank (row) order.
    allocate (both(ny * nx))
    do c = 1, 2
      if (c == 1) then
        call gather(u, both)
      else
        call gather(v, both)
      end if
      if (rank == 0) all((c - 1) * ny * nx + 1:c * ny * nx) = both
    end do
    if (rank == 0) then
      call write_raw(all)
      print '(a, i0, a, i0, a, i0, a)', 'rank 0: ', rows, ' of ', ny, ' rows, stream ', len, &
        ' bytes (Fortran)'
    end if
  end subroutine

end program
