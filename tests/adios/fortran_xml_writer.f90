! A Fortran code compressing with factz through ADIOS2, configured by XML only
! (factz.xml, io "fields"): it never names factz. The adios2 wheel ships no
! Fortran bindings, so this calls ADIOS2's C API through iso_c_binding, which is
! what a Fortran code without adios2_mod would do; with ADIOS2's Fortran
! bindings the XML route is the same (adios2_init(adios, "factz.xml", ierr)).
!
!   fortran_xml_writer CONFIG.xml OUT.bp RAW.f32 NY NX
!
! RAW holds u then v (C order (2, NY, NX)); one step, two blocks (the halves
! of the rows, as two ranks would write them).
program fortran_xml_writer
  use iso_c_binding
  implicit none

  interface
    function adios2_init_config_serial(config) bind(C) result(a)
      import :: c_ptr, c_char
      character(kind=c_char), intent(in) :: config(*)
      type(c_ptr) :: a
    end function
    function adios2_declare_io(adios, name) bind(C) result(io)
      import :: c_ptr, c_char
      type(c_ptr), value :: adios
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr) :: io
    end function
    function adios2_define_variable(io, name, vtype, ndims, shape, start, count, constant) &
        bind(C) result(var)
      import :: c_ptr, c_char, c_int, c_size_t
      type(c_ptr), value :: io
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: vtype, constant
      integer(c_size_t), value :: ndims
      integer(c_size_t), intent(in) :: shape(*), start(*), count(*)
      type(c_ptr) :: var
    end function
    function adios2_set_selection(var, ndims, start, count) bind(C) result(err)
      import :: c_ptr, c_int, c_size_t
      type(c_ptr), value :: var
      integer(c_size_t), value :: ndims
      integer(c_size_t), intent(in) :: start(*), count(*)
      integer(c_int) :: err
    end function
    function adios2_open(io, name, mode) bind(C) result(engine)
      import :: c_ptr, c_char, c_int
      type(c_ptr), value :: io
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: mode
      type(c_ptr) :: engine
    end function
    function adios2_begin_step(engine, mode, timeout, status) bind(C) result(err)
      import :: c_ptr, c_int, c_float
      type(c_ptr), value :: engine
      integer(c_int), value :: mode
      real(c_float), value :: timeout
      integer(c_int), intent(out) :: status
      integer(c_int) :: err
    end function
    function adios2_put(engine, var, data, launch) bind(C) result(err)
      import :: c_ptr, c_int, c_float
      type(c_ptr), value :: engine, var
      real(c_float), intent(in) :: data(*)
      integer(c_int), value :: launch
      integer(c_int) :: err
    end function
    function adios2_end_step(engine) bind(C) result(err)
      import :: c_ptr, c_int
      type(c_ptr), value :: engine
      integer(c_int) :: err
    end function
    function adios2_close(engine) bind(C) result(err)
      import :: c_ptr, c_int
      type(c_ptr), value :: engine
      integer(c_int) :: err
    end function
    function adios2_finalize(adios) bind(C) result(err)
      import :: c_ptr, c_int
      type(c_ptr), value :: adios
      integer(c_int) :: err
    end function
  end interface

  ! adios2_c_types.h
  integer(c_int), parameter :: TYPE_FLOAT = 1, MODE_WRITE = 1, MODE_SYNC = 5
  integer(c_int), parameter :: STEP_APPEND = 0, CONSTANT_DIMS_FALSE = 0

  character(len=4096) :: config, out, raw, arg
  integer(c_size_t) :: ny, nx, lo, rows, shape(3), start(3), count(3)
  real(c_float), allocatable :: field(:), block(:)
  type(c_ptr) :: adios, io, var, engine
  integer(c_int) :: status
  integer :: unit, ios, b, c, err

  if (command_argument_count() /= 5) call die('usage: CONFIG.xml OUT.bp RAW.f32 NY NX')
  call get_command_argument(1, config)
  call get_command_argument(2, out)
  call get_command_argument(3, raw)
  call get_command_argument(4, arg)
  read (arg, *, iostat=ios) ny
  if (ios /= 0) call die('NY: a number')
  call get_command_argument(5, arg)
  read (arg, *, iostat=ios) nx
  if (ios /= 0) call die('NX: a number')

  allocate (field(2 * ny * nx))
  open (newunit=unit, file=trim(raw), access='stream', form='unformatted', status='old', &
        action='read', iostat=ios)
  if (ios /= 0) call die('cannot open RAW')
  read (unit, iostat=ios) field
  if (ios /= 0) call die('RAW holds fewer than 2*NY*NX floats')
  close (unit)

  adios = adios2_init_config_serial(trim(config) // c_null_char)
  if (.not. c_associated(adios)) call die('adios2_init_config_serial failed')
  io = adios2_declare_io(adios, 'fields' // c_null_char)
  shape = [2_c_size_t, ny, nx]
  start = 0
  var = adios2_define_variable(io, 'uv' // c_null_char, TYPE_FLOAT, 3_c_size_t, shape, start, &
                               shape, CONSTANT_DIMS_FALSE)
  engine = adios2_open(io, trim(out) // c_null_char, MODE_WRITE)
  if (.not. c_associated(var) .or. .not. c_associated(engine)) call die('define/open failed')
  if (adios2_begin_step(engine, STEP_APPEND, -1.0_c_float, status) /= 0) call die('begin_step')
  do b = 0, 1
    lo = merge(0_c_size_t, ny / 2, b == 0)
    rows = merge(ny / 2, ny - ny / 2, b == 0)
    allocate (block(2 * rows * nx))
    do c = 0, 1  ! the rows [lo, lo + rows) of each component, C order
      block(c * rows * nx + 1:(c + 1) * rows * nx) = field(c * ny * nx + lo * nx + 1: &
                                                           c * ny * nx + (lo + rows) * nx)
    end do
    start = [0_c_size_t, lo, 0_c_size_t]
    count = [2_c_size_t, rows, nx]
    if (adios2_set_selection(var, 3_c_size_t, start, count) /= 0) call die('set_selection')
    err = adios2_put(engine, var, block, MODE_SYNC)
    if (err /= 0) call die('put failed (see ADIOS2''s message above)')
    deallocate (block)
  end do
  if (adios2_end_step(engine) /= 0) call die('end_step')
  if (adios2_close(engine) /= 0) call die('close')
  if (adios2_finalize(adios) /= 0) call die('finalize')

contains

  subroutine die(msg)
    character(*), intent(in) :: msg
    write (0, '(a)') 'fortran_xml_writer: ' // msg
    error stop 1
  end subroutine

end program
