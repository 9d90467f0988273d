! factz for Fortran: the C ABI of include/factz.h (and the HDF5 helpers of
! factz_h5.h) through iso_c_binding, plus a few conveniences. Fortran 2003
! interoperability; the conveniences use c_sizeof and error stop (2008).
!
!   use factz
!   type(factz_field_config) :: cfg
!   cfg = factz_field_defaults()          ! struct_size set, defaults filled
!   cfg%bound_kind = FACTZ_BOUND_ABS; cfg%bound = 1d-2
!   st = factz_field_compress(cfg, u, v, ny, nx, buf, cap, len)
!   if (st /= FACTZ_OK) print '(a)', factz_error_message()
!
! Conventions:
!  - C's uint32_t fields are integer(c_int32_t) (Fortran has no unsigned
!    type; every value factz uses fits), uint64_t is integer(c_int64_t),
!    size_t is integer(c_size_t): pass sizes as int(n, c_size_t).
!  - Fields are row-major in C terms: a Fortran array u(nx, ny) (x fastest)
!    is the C field ny x nx. Data arguments are assumed-size, so any
!    contiguous array (or contiguous section) of the right length works.
!  - Streams are integer(c_int8_t) byte buffers.
!  - hid_t is int64_t since HDF5 1.10: pass your integer(hid_t) handle
!    directly. This module does not use HDF5's Fortran module.
!  - factz_h5_* live in libfactz_h5 (CMake target factz::h5), the rest in
!    libfactz (factz::factz); factz::fortran is this module.
module factz
  use, intrinsic :: iso_c_binding
  implicit none
  private :: c_string_copy

  ! ---- factz_status (function results, integer(c_int)) ----------------------
  integer(c_int), parameter :: FACTZ_OK = 0
  integer(c_int), parameter :: FACTZ_INVALID_ARGUMENT = 4001
  integer(c_int), parameter :: FACTZ_NULL_POINTER = 4002
  integer(c_int), parameter :: FACTZ_CORRUPT_STREAM = 4003
  integer(c_int), parameter :: FACTZ_UNSUPPORTED = 4004
  integer(c_int), parameter :: FACTZ_BUFFER_TOO_SMALL = 4005
  integer(c_int), parameter :: FACTZ_INTERNAL = 4006
  integer(c_int), parameter :: FACTZ_PANIC = 4007

  ! FACTZ_ABI_VERSION of the header this module mirrors (Fortran names are
  ! case-insensitive, so it cannot share factz_abi_version's name); compare
  ! it with factz_abi_version() to detect a mismatched library.
  integer(c_int32_t), parameter :: FACTZ_HEADER_ABI_VERSION = 1

  ! ---- values of config, report and info fields (integer(c_int32_t)) --------
  ! factz_mode
  integer(c_int32_t), parameter :: FACTZ_MODE_LOSSLESS = 0
  integer(c_int32_t), parameter :: FACTZ_MODE_BLOCKWISE = 1
  integer(c_int32_t), parameter :: FACTZ_MODE_SPECULATIVE = 2
  ! factz_bound_kind
  integer(c_int32_t), parameter :: FACTZ_BOUND_ABS = 1
  integer(c_int32_t), parameter :: FACTZ_BOUND_REL = 2
  ! factz_coder
  integer(c_int32_t), parameter :: FACTZ_CODER_HUFFMAN = 1
  integer(c_int32_t), parameter :: FACTZ_CODER_RANS = 2
  ! factz_layout
  integer(c_int32_t), parameter :: FACTZ_LAYOUT_SOA = 0
  integer(c_int32_t), parameter :: FACTZ_LAYOUT_AOS = 1
  ! factz_cp_type
  integer(c_int32_t), parameter :: FACTZ_CP_SADDLE = 1
  integer(c_int32_t), parameter :: FACTZ_CP_SOURCE = 2
  integer(c_int32_t), parameter :: FACTZ_CP_SINK = 3
  integer(c_int32_t), parameter :: FACTZ_CP_REPELLING_FOCUS = 4
  integer(c_int32_t), parameter :: FACTZ_CP_ATTRACTING_FOCUS = 5
  integer(c_int32_t), parameter :: FACTZ_CP_CENTER = 6
  ! flags (combine with ior)
  integer(c_int32_t), parameter :: FACTZ_CHUNK_OF_LARGER = 1
  integer(c_int32_t), parameter :: FACTZ_VERIFY = 2
  integer(c_int32_t), parameter :: FACTZ_LOSSLESS_FALLBACK = 4
  integer(c_int32_t), parameter :: FACTZ_RAN_ON_GPU = 8
  ! factz_backend: where compress runs (config%backend)
  integer(c_int32_t), parameter :: FACTZ_BACKEND_CPU = 0
  integer(c_int32_t), parameter :: FACTZ_BACKEND_CUDA = 1
  integer(c_int32_t), parameter :: FACTZ_BACKEND_AUTO = 2
  ! particles: linking_kind, base, report/info source
  integer(c_int32_t), parameter :: FACTZ_LINK_LENGTH = 1
  integer(c_int32_t), parameter :: FACTZ_LINK_ETA = 2
  integer(c_int32_t), parameter :: FACTZ_BASE_BUILTIN = 1
  integer(c_int32_t), parameter :: FACTZ_BASE_SZ3 = 2
  integer(c_int32_t), parameter :: FACTZ_BASE_ZFP = 3
  integer(c_int32_t), parameter :: FACTZ_SOURCE_LOSSLESS = 0
  integer(c_int32_t), parameter :: FACTZ_SOURCE_EXTERNAL = 4

  ! ---- HDF5 filter (factz_h5_cd.h) ------------------------------------------
  ! Default integer kind, as h5pset_filter_f and h5zfilter_avail_f take it.
  integer, parameter :: FACTZ_H5_FILTER_ID = 459
  integer, parameter :: FACTZ_H5_CD_VERSION = 1
  ! cd_values words a user passes / the filter stores after set_local.
  integer, parameter :: FACTZ_H5_USER_NELMTS = 15
  integer, parameter :: FACTZ_H5_NELMTS = 20
  integer, parameter :: FACTZ_H5_KIND_AUTO = 0
  integer, parameter :: FACTZ_H5_KIND_FIELD2D = 1
  integer, parameter :: FACTZ_H5_KIND_PARTICLES = 2
  integer, parameter :: FACTZ_H5_CHUNK_RULE_DEFAULT = 0
  integer, parameter :: FACTZ_H5_CHUNK_RULE_ON = 1
  integer, parameter :: FACTZ_H5_CHUNK_RULE_OFF = 2
  integer, parameter :: FACTZ_H5_FLAG_VERIFY = 1

  ! ---- versioned structs: set struct_size = c_sizeof(x) (the *_defaults
  ! functions do it for configs). Field order and types as in factz.h. ------
  type, bind(c) :: factz_field_config
    integer(c_int32_t) :: struct_size = 0
    integer(c_int32_t) :: mode = 0         ! FACTZ_MODE_BLOCKWISE or _SPECULATIVE
    integer(c_int32_t) :: bound_kind = 0   ! FACTZ_BOUND_*
    integer(c_int32_t) :: coder = 0        ! FACTZ_CODER_*
    real(c_double) :: bound = 0            ! absolute value or relative factor, > 0
    integer(c_int32_t) :: zstd_level = 0   ! 0 none, 1..22
    integer(c_int32_t) :: flags = 0        ! FACTZ_CHUNK_OF_LARGER, FACTZ_VERIFY
    integer(c_int32_t) :: layout = 0       ! FACTZ_LAYOUT_* the stream records
    integer(c_int32_t) :: backend = 0      ! FACTZ_BACKEND_* (0: CPU)
  end type factz_field_config

  type, bind(c) :: factz_field_report
    integer(c_int32_t) :: struct_size = 0
    integer(c_int32_t) :: flags = 0
    real(c_double) :: abs_bound = 0
    integer(c_int64_t) :: exact_vertices = 0
  end type factz_field_report

  type, bind(c) :: factz_field_stream_info
    integer(c_int32_t) :: struct_size = 0
    integer(c_int32_t) :: format_version = 0
    integer(c_int64_t) :: ny = 0
    integer(c_int64_t) :: nx = 0
    integer(c_int32_t) :: layout = 0
    integer(c_int32_t) :: mode = 0
    integer(c_int32_t) :: coder = 0
    integer(c_int32_t) :: zstd_level = 0
    real(c_double) :: abs_bound = 0
    integer(c_int32_t) :: flags = 0
    integer(c_int32_t) :: dtype = 0        ! 1 float32, 2 float64 (the _f64 functions)
  end type factz_field_stream_info

  type, bind(c) :: factz_particles_config
    integer(c_int32_t) :: struct_size = 0
    integer(c_int32_t) :: bound_kind = 0   ! FACTZ_BOUND_*
    real(c_double) :: bound = 0            ! >= 0 (0: lossless)
    integer(c_int32_t) :: linking_kind = 0 ! FACTZ_LINK_*
    integer(c_int32_t) :: base = 0         ! FACTZ_BASE_*
    real(c_double) :: linking = 0          ! b or eta
    real(c_double) :: box_side = 0         ! 0 open, else periodic side L
    integer(c_int32_t) :: coder = 0
    integer(c_int32_t) :: zstd_level = 0
    integer(c_int32_t) :: flags = 0
    integer(c_int32_t) :: edit_bits = 0
    real(c_double) :: learning_rate = 0
    integer(c_int32_t) :: max_iters = 0
    integer(c_int32_t) :: backend = 0      ! FACTZ_BACKEND_* (0: CPU)
    real(c_double) :: tolerance = 0
  end type factz_particles_config

  type, bind(c) :: factz_particles_report
    integer(c_int32_t) :: struct_size = 0
    integer(c_int32_t) :: flags = 0
    real(c_double) :: abs_bound = 0
    real(c_double) :: linking_length = 0
    integer(c_int32_t) :: source = 0
    integer(c_int32_t) :: iterations = 0
    integer(c_int64_t) :: exact_particles = 0
    integer(c_int64_t) :: vulnerable_pairs = 0
    integer(c_int64_t) :: violated_before = 0
    integer(c_int64_t) :: active_particles = 0
    integer(c_int64_t) :: violated_after = 0
    integer(c_int64_t) :: fallback_particles = 0
    integer(c_int64_t) :: edited_coords = 0
    integer(c_int64_t) :: base_bytes = 0
    integer(c_int64_t) :: correction_bytes = 0
  end type factz_particles_report

  ! ---- the C functions -------------------------------------------------------
  interface
    ! Versions: (major << 16) | (minor << 8) | patch, and the ABI version.
    function factz_version() bind(c, name="factz_version")
      import :: c_int32_t
      integer(c_int32_t) :: factz_version
    end function
    function factz_abi_version() bind(c, name="factz_abi_version")
      import :: c_int32_t
      integer(c_int32_t) :: factz_abi_version
    end function
    ! C strings; factz_error_message() / factz_status_message() copy them.
    function factz_version_string() bind(c, name="factz_version_string")
      import :: c_ptr
      type(c_ptr) :: factz_version_string
    end function
    function factz_last_error() bind(c, name="factz_last_error")
      import :: c_ptr
      type(c_ptr) :: factz_last_error
    end function
    function factz_status_string(status) bind(c, name="factz_status_string")
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: factz_status_string
    end function

    ! ---- vector fields ----
    function factz_field_config_default(cfg) bind(c, name="factz_field_config_default")
      import :: c_int, factz_field_config
      type(factz_field_config), intent(inout) :: cfg
      integer(c_int) :: factz_field_config_default
    end function
    function factz_field_max_compressed_size(ny, nx, out) &
        bind(c, name="factz_field_max_compressed_size")
      import :: c_int, c_size_t
      integer(c_size_t), value :: ny, nx
      integer(c_size_t), intent(out) :: out
      integer(c_int) :: factz_field_max_compressed_size
    end function
    ! u, v: ny*nx floats each (SoA), x fastest.
    function factz_field_compress(cfg, u, v, ny, nx, out, out_capacity, out_len) &
        bind(c, name="factz_field_compress")
      import :: c_int, c_int8_t, c_size_t, c_float, factz_field_config
      type(factz_field_config), intent(in) :: cfg
      real(c_float), intent(in) :: u(*), v(*)
      integer(c_size_t), value :: ny, nx
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      integer(c_int) :: factz_field_compress
    end function
    function factz_field_compress_ex(cfg, u, v, ny, nx, out, out_capacity, out_len, report) &
        bind(c, name="factz_field_compress_ex")
      import :: c_int, c_int8_t, c_size_t, c_float, factz_field_config, factz_field_report
      type(factz_field_config), intent(in) :: cfg
      real(c_float), intent(in) :: u(*), v(*)
      integer(c_size_t), value :: ny, nx
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      type(factz_field_report), intent(inout) :: report ! struct_size set by the caller
      integer(c_int) :: factz_field_compress_ex
    end function
    function factz_field_decompress(stream, len, u, v, ny, nx) &
        bind(c, name="factz_field_decompress")
      import :: c_int, c_int8_t, c_size_t, c_float
      integer(c_int8_t), intent(in) :: stream(*)
      integer(c_size_t), value :: len
      real(c_float), intent(inout) :: u(*), v(*)
      integer(c_size_t), value :: ny, nx
      integer(c_int) :: factz_field_decompress
    end function
    ! float64 fields (real(c_double)): either mode on the CPU, the same guarantee.
    function factz_field_max_compressed_size_f64(ny, nx, out) &
        bind(c, name="factz_field_max_compressed_size_f64")
      import :: c_int, c_size_t
      integer(c_size_t), value :: ny, nx
      integer(c_size_t), intent(out) :: out
      integer(c_int) :: factz_field_max_compressed_size_f64
    end function
    function factz_field_compress_f64(cfg, u, v, ny, nx, out, out_capacity, out_len, report) &
        bind(c, name="factz_field_compress_f64")
      import :: c_int, c_int8_t, c_size_t, c_double, factz_field_config, factz_field_report
      type(factz_field_config), intent(in) :: cfg
      real(c_double), intent(in) :: u(*), v(*)
      integer(c_size_t), value :: ny, nx
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      type(factz_field_report), intent(inout) :: report ! struct_size set by the caller
      integer(c_int) :: factz_field_compress_f64
    end function
    function factz_field_decompress_f64(stream, len, u, v, ny, nx) &
        bind(c, name="factz_field_decompress_f64")
      import :: c_int, c_int8_t, c_size_t, c_double
      integer(c_int8_t), intent(in) :: stream(*)
      integer(c_size_t), value :: len
      real(c_double), intent(inout) :: u(*), v(*)
      integer(c_size_t), value :: ny, nx
      integer(c_int) :: factz_field_decompress_f64
    end function
    function factz_field_info(stream, len, out) bind(c, name="factz_field_info")
      import :: c_int, c_int8_t, c_size_t, factz_field_stream_info
      integer(c_int8_t), intent(in) :: stream(*)
      integer(c_size_t), value :: len
      type(factz_field_stream_info), intent(inout) :: out ! struct_size set by the caller
      integer(c_int) :: factz_field_info
    end function

    ! ---- particles: xyz holds 3*n floats, (x, y, z) per particle ----
    function factz_particles_config_default(cfg) bind(c, name="factz_particles_config_default")
      import :: c_int, factz_particles_config
      type(factz_particles_config), intent(inout) :: cfg
      integer(c_int) :: factz_particles_config_default
    end function
    function factz_particles_max_compressed_size(n, out) &
        bind(c, name="factz_particles_max_compressed_size")
      import :: c_int, c_size_t
      integer(c_size_t), value :: n
      integer(c_size_t), intent(out) :: out
      integer(c_int) :: factz_particles_max_compressed_size
    end function
    function factz_particles_compress(xyz, n, cfg, out, out_capacity, out_len) &
        bind(c, name="factz_particles_compress")
      import :: c_int, c_int8_t, c_size_t, c_float, factz_particles_config
      real(c_float), intent(in) :: xyz(*)
      integer(c_size_t), value :: n
      type(factz_particles_config), intent(in) :: cfg
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      integer(c_int) :: factz_particles_compress
    end function
    function factz_particles_compress_ex(xyz, n, cfg, out, out_capacity, out_len, report) &
        bind(c, name="factz_particles_compress_ex")
      import :: c_int, c_int8_t, c_size_t, c_float, factz_particles_config, &
                factz_particles_report
      real(c_float), intent(in) :: xyz(*)
      integer(c_size_t), value :: n
      type(factz_particles_config), intent(in) :: cfg
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      type(factz_particles_report), intent(inout) :: report ! struct_size set by the caller
      integer(c_int) :: factz_particles_compress_ex
    end function
    function factz_particles_decompress(stream, len, xyz, n) &
        bind(c, name="factz_particles_decompress")
      import :: c_int, c_int8_t, c_size_t, c_float
      integer(c_int8_t), intent(in) :: stream(*)
      integer(c_size_t), value :: len
      real(c_float), intent(inout) :: xyz(*)
      integer(c_size_t), value :: n
      integer(c_int) :: factz_particles_decompress
    end function
    ! float64 positions (the built-in base, on the CPU): xyz holds 3*n doubles.
    function factz_particles_max_compressed_size_f64(n, out) &
        bind(c, name="factz_particles_max_compressed_size_f64")
      import :: c_int, c_size_t
      integer(c_size_t), value :: n
      integer(c_size_t), intent(out) :: out
      integer(c_int) :: factz_particles_max_compressed_size_f64
    end function
    function factz_particles_compress_f64(xyz, n, cfg, out, out_capacity, out_len, report) &
        bind(c, name="factz_particles_compress_f64")
      import :: c_int, c_int8_t, c_size_t, c_double, factz_particles_config, &
                factz_particles_report
      real(c_double), intent(in) :: xyz(*)
      integer(c_size_t), value :: n
      type(factz_particles_config), intent(in) :: cfg
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      type(factz_particles_report), intent(inout) :: report ! struct_size set by the caller
      integer(c_int) :: factz_particles_compress_f64
    end function
    function factz_particles_decompress_f64(stream, len, xyz, n) &
        bind(c, name="factz_particles_decompress_f64")
      import :: c_int, c_int8_t, c_size_t, c_double
      integer(c_int8_t), intent(in) :: stream(*)
      integer(c_size_t), value :: len
      real(c_double), intent(inout) :: xyz(*)
      integer(c_size_t), value :: n
      integer(c_int) :: factz_particles_decompress_f64
    end function
    ! b from linking_kind FACTZ_LINK_LENGTH (linking is b) or FACTZ_LINK_ETA.
    function factz_particles_linking_length(xyz, n, linking_kind, linking, box_side, b) &
        bind(c, name="factz_particles_linking_length")
      import :: c_int, c_int32_t, c_size_t, c_float, c_double
      real(c_float), intent(in) :: xyz(*)
      integer(c_size_t), value :: n
      integer(c_int32_t), value :: linking_kind
      real(c_double), value :: linking, box_side
      real(c_double), intent(out) :: b
      integer(c_int) :: factz_particles_linking_length
    end function

    ! ---- MPI (include/factz_mpi.h): only in a libfactz built with MPI (CMake
    ! -DFACTZ_MPI=ON, cargo feature mpi). comm is a Fortran MPI handle
    ! (MPI_COMM_WORLD from `use mpi`, or comm%MPI_VAL from mpi_f08). Every rank
    ! of comm calls with its own particles or block and gets its own stream;
    ! any rank's failure is every rank's error. ----
    function factz_particles_compress_mpi(comm, xyz, n, cfg, out, out_capacity, out_len) &
        bind(c, name="factz_particles_compress_mpi_f")
      import :: c_int, c_int8_t, c_size_t, c_float, factz_particles_config
      integer(c_int), value :: comm
      real(c_float), intent(in) :: xyz(*)
      integer(c_size_t), value :: n
      type(factz_particles_config), intent(in) :: cfg
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      integer(c_int) :: factz_particles_compress_mpi
    end function
    function factz_field_compress_mpi(comm, cfg, u, v, ny, nx, out, out_capacity, out_len) &
        bind(c, name="factz_field_compress_mpi_f")
      import :: c_int, c_int8_t, c_size_t, c_float, factz_field_config
      integer(c_int), value :: comm
      type(factz_field_config), intent(in) :: cfg
      real(c_float), intent(in) :: u(*), v(*)
      integer(c_size_t), value :: ny, nx
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      integer(c_int) :: factz_field_compress_mpi
    end function
    ! The block's first vertex is (y0, x0) of the whole grid (0-based; blocks must
    ! not overlap): touching ranks exchange the ring around each other's block
    ! and the border is not stored exactly (the better ratio).
    function factz_field_compress_mpi_at(comm, cfg, u, v, ny, nx, y0, x0, out, out_capacity, &
                                         out_len) bind(c, name="factz_field_compress_mpi_at_f")
      import :: c_int, c_int8_t, c_size_t, c_float, factz_field_config
      integer(c_int), value :: comm
      type(factz_field_config), intent(in) :: cfg
      real(c_float), intent(in) :: u(*), v(*)
      integer(c_size_t), value :: ny, nx, y0, x0
      integer(c_int8_t), intent(inout) :: out(*)
      integer(c_size_t), value :: out_capacity
      integer(c_size_t), intent(out) :: out_len
      integer(c_int) :: factz_field_compress_mpi_at
    end function

    ! ---- HDF5 helpers (libfactz_h5). Results are herr_t: negative on failure,
    ! with an HDF5 error pushed. dcpl is your integer(hid_t) property list. ----
    function factz_h5_set_field2d(dcpl, cfg) bind(c, name="factz_h5_set_field2d")
      import :: c_int, c_int64_t, factz_field_config
      integer(c_int64_t), value :: dcpl
      type(factz_field_config), intent(in) :: cfg
      integer(c_int) :: factz_h5_set_field2d
    end function
    function factz_h5_set_particles(dcpl, cfg) bind(c, name="factz_h5_set_particles")
      import :: c_int, c_int64_t, factz_particles_config
      integer(c_int64_t), value :: dcpl
      type(factz_particles_config), intent(in) :: cfg ! needs FACTZ_LINK_LENGTH
      integer(c_int) :: factz_h5_set_particles
    end function
    ! Registers the filter with the HDF5 library the program links (no plugin
    ! path needed). Idempotent.
    function factz_h5_register() bind(c, name="factz_h5_register")
      import :: c_int
      integer(c_int) :: factz_h5_register
    end function
    ! The cd_values words for h5pset_filter_f (0 on success, -1 otherwise).
    function factz_h5_field2d_cd_values(cfg, cd_values) &
        bind(c, name="factz_h5_field2d_cd_values")
      import :: c_int, factz_field_config
      type(factz_field_config), intent(in) :: cfg
      integer(c_int), intent(out) :: cd_values(15) ! FACTZ_H5_USER_NELMTS
      integer(c_int) :: factz_h5_field2d_cd_values
    end function
    function factz_h5_particles_cd_values(cfg, cd_values) &
        bind(c, name="factz_h5_particles_cd_values")
      import :: c_int, factz_particles_config
      type(factz_particles_config), intent(in) :: cfg
      integer(c_int), intent(out) :: cd_values(15) ! FACTZ_H5_USER_NELMTS
      integer(c_int) :: factz_h5_particles_cd_values
    end function
  end interface

contains

  ! A Fortran copy of a NUL-terminated C string ("" for a NULL pointer).
  function c_string_copy(p) result(s)
    type(c_ptr), intent(in) :: p
    character(:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    interface ! local, so that strlen is no entity of the module
      function c_strlen(str) bind(c, name="strlen")
        import :: c_ptr, c_size_t
        type(c_ptr), value :: str
        integer(c_size_t) :: c_strlen
      end function
    end interface
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  ! This thread's last factz error message ("" after a successful call).
  ! Copied, so it stays valid across later factz calls.
  function factz_error_message() result(msg)
    character(:), allocatable :: msg
    msg = c_string_copy(factz_last_error())
  end function

  ! A fixed description of a status code, e.g. for FACTZ_BUFFER_TOO_SMALL.
  function factz_status_message(status) result(msg)
    integer(c_int), intent(in) :: status
    character(:), allocatable :: msg
    msg = c_string_copy(factz_status_string(status))
  end function

  ! A field config with struct_size set and the library's defaults (mode S,
  ! relative bound 1e-3, rANS, no zstd, no flags, SOA). Failure means the
  ! library does not accept this module's struct (a mismatched libfactz):
  ! reported through `status` when given, else fatal.
  function factz_field_defaults(status) result(cfg)
    integer(c_int), intent(out), optional :: status
    type(factz_field_config) :: cfg
    integer(c_int) :: st
    cfg%struct_size = int(c_sizeof(cfg), c_int32_t)
    st = factz_field_config_default(cfg)
    if (present(status)) then
      status = st
    else if (st /= FACTZ_OK) then
      error stop 'factz_field_defaults: factz_field_config_default failed'
    end if
  end function

  ! A particle config with struct_size set and the library's defaults
  ! (relative bound 1e-3, eta 0.2, open box, built-in base, rANS, ...).
  ! Failure as for factz_field_defaults.
  function factz_particles_defaults(status) result(cfg)
    integer(c_int), intent(out), optional :: status
    type(factz_particles_config) :: cfg
    integer(c_int) :: st
    cfg%struct_size = int(c_sizeof(cfg), c_int32_t)
    st = factz_particles_config_default(cfg)
    if (present(status)) then
      status = st
    else if (st /= FACTZ_OK) then
      error stop 'factz_particles_defaults: factz_particles_config_default failed'
    end if
  end function

end module factz
