! fortran_roundtrip FILE.h5 IN.f32 NY NX CY CX OUT.f32
!
! A Fortran user of the installed factz package. IN.f32 is a SoA field
! (float32, all of u then all of v, each NY x NX with x fastest), which is
! exactly a Fortran array field(NX, NY, 2).
!  (a) compresses it in memory (factz_field_compress_ex, mode S, relative
!      bound 1e-3) and decompresses it, checking the bound;
!  (b) writes it to /fortran_field with HDF5's Fortran API, the filter added
!      by factz_h5_set_field2d (same config) and loaded as a plugin
!      (HDF5_PLUGIN_PATH). Fortran dimensions are the reverse of C's: the
!      array (NX, NY, 2) with chunks (CX, CY, 2) is the dataset (2, NY, NX)
!      with chunks (2, CY, CX) that C, h5dump and h5py see. Reopens the file,
!      reads the dataset back, checks it, writes it to OUT.f32 and prints
!      the ratio.
! Any failure ends in error stop (non-zero exit) with a message.
program fortran_roundtrip
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit, int64
  use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
  use hdf5
  use factz
  implicit none

  character(:), allocatable :: h5path, inpath, outpath
  integer(c_int64_t) :: ny, nx, cy, cx
  real(c_float), allocatable :: field(:, :, :), mem(:, :, :), back(:, :, :)
  type(factz_field_config) :: cfg
  double precision :: bound, max_err
  real(c_float) :: lo, hi

  if (command_argument_count() /= 7) &
    call die('usage: fortran_roundtrip FILE.h5 IN.f32 NY NX CY CX OUT.f32')
  h5path = argument(1)
  inpath = argument(2)
  ny = dimension_arg(3, 'NY')
  nx = dimension_arg(4, 'NX')
  cy = dimension_arg(5, 'CY')
  cx = dimension_arg(6, 'CX')
  outpath = argument(7)

  allocate (field(nx, ny, 2), mem(nx, ny, 2), back(nx, ny, 2))
  call read_raw(inpath, field)
  ! The value range of the finite values of both components, as factz reads
  ! a relative bound.
  lo = minval(field, mask=ieee_is_finite(field))
  hi = maxval(field, mask=ieee_is_finite(field))
  bound = 1d-3 * (dble(hi) - dble(lo))
  if (.not. (bound > 0)) call die('the field has no finite value range, so no relative bound')

  cfg = factz_field_defaults()
  cfg%mode = FACTZ_MODE_SPECULATIVE
  cfg%bound_kind = FACTZ_BOUND_REL
  cfg%bound = 1d-3

  call in_memory()
  call through_hdf5()
  call write_raw(outpath, back)

contains

  ! (a) The C ABI directly.
  subroutine in_memory()
    integer(c_int8_t), allocatable :: stream(:)
    integer(c_size_t) :: cap, length
    integer(c_int) :: st
    type(factz_field_report) :: report
    type(factz_field_stream_info) :: info

    st = factz_field_max_compressed_size(int(ny, c_size_t), int(nx, c_size_t), cap)
    if (st /= FACTZ_OK) call die('factz_field_max_compressed_size: '//factz_error_message())
    allocate (stream(cap))
    report%struct_size = int(c_sizeof(report), c_int32_t)
    st = factz_field_compress_ex(cfg, field(:, :, 1), field(:, :, 2), int(ny, c_size_t), &
                                 int(nx, c_size_t), stream, cap, length, report)
    if (st /= FACTZ_OK) call die('factz_field_compress_ex: '//factz_error_message())
    ! One field compressed whole: its relative bound is 1e-3 of this range.
    if (abs(report%abs_bound - bound) > 1d-12 * bound) then
      write (error_unit, '(a,es14.7,a,es14.7)') 'report abs_bound ', report%abs_bound, &
        ', expected ', bound
      call die('factz_field_compress_ex reported another absolute bound')
    end if

    info%struct_size = int(c_sizeof(info), c_int32_t)
    st = factz_field_info(stream, length, info)
    if (st /= FACTZ_OK) call die('factz_field_info: '//factz_error_message())
    if (info%ny /= ny .or. info%nx /= nx .or. info%mode /= FACTZ_MODE_SPECULATIVE .or. &
        info%layout /= FACTZ_LAYOUT_SOA) &
      call die('factz_field_info does not describe the field that was compressed')

    ! A buffer of the wrong shape is refused with a message.
    st = factz_field_decompress(stream, length, mem(:, :, 1), mem(:, :, 2), &
                                int(ny - 1, c_size_t), int(nx, c_size_t))
    if (st /= FACTZ_INVALID_ARGUMENT .or. len(factz_error_message()) == 0) &
      call die('decompressing into a buffer of the wrong shape was not refused with a message')

    st = factz_field_decompress(stream, length, mem(:, :, 1), mem(:, :, 2), &
                                int(ny, c_size_t), int(nx, c_size_t))
    if (st /= FACTZ_OK) call die('factz_field_decompress: '//factz_error_message())
    call check_bound(field, mem, report%abs_bound, 'in memory', max_err)
    write (output_unit, '(a,es10.4,a,es10.4,a,i0,2a)') &
      'fortran_roundtrip: in memory, mode S, rel 1e-3 = abs ', report%abs_bound, &
      ': max error ', max_err, ', ', length, ' bytes, ratio ', &
      ratio_text(dble(size(field)) * 4d0 / dble(length))
  end subroutine

  ! (b) HDF5's Fortran API with the filter plugin.
  subroutine through_hdf5()
    integer(hid_t) :: file, space, dcpl, dset
    integer(hsize_t) :: dims(3), chunk(3), got(3), maxdims(3), stored
    integer(size_t) :: ncd
    integer :: err, rank, flags, cd(FACTZ_H5_NELMTS)
    character(80) :: name
    logical :: avail

    dims = [integer(hsize_t) :: nx, ny, 2]
    chunk = [integer(hsize_t) :: cx, cy, 2]
    call h5open_f(err)
    call check(err, 'h5open_f')
    call h5zfilter_avail_f(FACTZ_H5_FILTER_ID, avail, err)
    call check(err, 'h5zfilter_avail_f')
    if (.not. avail) call die('HDF5 cannot find the factz filter (id 459): set '// &
                              'HDF5_PLUGIN_PATH to the directory of libH5Zfactz.so')

    call h5fcreate_f(h5path, H5F_ACC_TRUNC_F, file, err)
    call check(err, 'h5fcreate_f '//h5path)
    call h5screate_simple_f(3, dims, space, err)
    call check(err, 'h5screate_simple_f')
    call h5pcreate_f(H5P_DATASET_CREATE_F, dcpl, err)
    call check(err, 'h5pcreate_f')
    call h5pset_chunk_f(dcpl, 3, chunk, err)
    call check(err, 'h5pset_chunk_f')
    ! integer(hid_t) is the C hid_t (int64_t) that factz_h5_set_field2d takes.
    call check(factz_h5_set_field2d(dcpl, cfg), 'factz_h5_set_field2d')
    call h5dcreate_f(file, 'fortran_field', H5T_IEEE_F32LE, space, dset, err, dcpl_id=dcpl)
    call check(err, 'h5dcreate_f /fortran_field')
    call h5dwrite_f(dset, H5T_NATIVE_REAL, field, dims, err)
    call check(err, 'h5dwrite_f /fortran_field')
    call h5dclose_f(dset, err)
    call check(err, 'h5dclose_f')
    call h5pclose_f(dcpl, err)
    call check(err, 'h5pclose_f')
    call h5sclose_f(space, err)
    call check(err, 'h5sclose_f')
    ! The file's close flushes cached chunks, so it runs the filter too.
    call h5fclose_f(file, err)
    call check(err, 'h5fclose_f after writing')

    call h5fopen_f(h5path, H5F_ACC_RDONLY_F, file, err)
    call check(err, 'reopening '//h5path)
    call h5dopen_f(file, 'fortran_field', dset, err)
    call check(err, 'h5dopen_f /fortran_field')
    call h5dget_space_f(dset, space, err)
    call check(err, 'h5dget_space_f')
    call h5sget_simple_extent_ndims_f(space, rank, err)
    call check(err, 'h5sget_simple_extent_ndims_f')
    if (rank /= 3) call die('/fortran_field is not of rank 3')
    call h5sget_simple_extent_dims_f(space, got, maxdims, err)
    call check(err, 'h5sget_simple_extent_dims_f')
    if (any(got /= dims)) call die('/fortran_field does not have the shape it was written with')
    call h5sclose_f(space, err)

    ! The filter must really be in the pipeline, with the words set_local adds.
    call h5dget_create_plist_f(dset, dcpl, err)
    call check(err, 'h5dget_create_plist_f')
    ncd = FACTZ_H5_NELMTS
    call h5pget_filter_by_id_f(dcpl, FACTZ_H5_FILTER_ID, flags, ncd, cd, &
                               int(len(name), size_t), name, err)
    call check(err, 'finding the factz filter in /fortran_field''s pipeline')
    if (ncd /= FACTZ_H5_NELMTS) call die('the stored factz filter lacks the words of set_local')
    call h5pclose_f(dcpl, err)

    call h5dread_f(dset, H5T_NATIVE_REAL, back, dims, err)
    call check(err, 'h5dread_f /fortran_field')
    call h5dget_storage_size_f(dset, stored, err)
    call check(err, 'h5dget_storage_size_f')
    call h5dclose_f(dset, err)
    call h5fclose_f(file, err)
    call check(err, 'h5fclose_f after reading')
    call h5close_f(err)

    ! The filter applies the relative bound per chunk, to the chunk's range;
    ! the promise is the bound over the whole dataset's range.
    call check_bound(field, back, bound, 'through HDF5', max_err)
    ! No ratio > 1 demanded: tiny chunks legitimately expand (their
    ! perimeters are stored exactly); the pipeline check shows the filter ran.
    if (stored == 0) call die('h5dget_storage_size_f reports no storage for /fortran_field')
    write (output_unit, '(a,2(i0,a),2(i0,a),es10.4,a,es10.4,a,i0,2a)') &
      'fortran_roundtrip: /fortran_field (2, ', ny, ', ', nx, ') chunks (2, ', cy, ', ', cx, &
      '), mode S, rel 1e-3 = abs ', bound, ': max error ', max_err, ', ', stored, &
      ' bytes stored, ratio ', ratio_text(dble(size(field)) * 4d0 / dble(stored))
  end subroutine

  ! Every finite value within `tol`, every non-finite one bit-exact.
  subroutine check_bound(orig, dec, tol, what, max_err)
    real(c_float), intent(in) :: orig(:, :, :), dec(:, :, :)
    double precision, intent(in) :: tol
    character(*), intent(in) :: what
    double precision, intent(out) :: max_err
    double precision :: e
    integer :: i, j, k
    character(*), parameter :: comp(2) = ['u', 'v']
    max_err = 0
    do k = 1, 2
      do j = 1, size(orig, 2)
        do i = 1, size(orig, 1)
          if (.not. ieee_is_finite(orig(i, j, k))) then
            if (transfer(orig(i, j, k), 0_c_int32_t) /= transfer(dec(i, j, k), 0_c_int32_t)) then
              write (error_unit, '(3a,i0,a,i0)') 'non-finite ', comp(k), ' at row ', j - 1, &
                ', column ', i - 1
              call die(what//': a non-finite value did not come back bit-exact')
            end if
            cycle
          end if
          e = abs(dble(dec(i, j, k)) - dble(orig(i, j, k)))
          if (.not. (e <= tol)) then
            write (error_unit, '(a,a,i0,a,i0,a,es16.9,a,es16.9,a,es10.3,a,es10.3)') comp(k), &
              ' at row ', j - 1, ', column ', i - 1, ': ', orig(i, j, k), ' decoded as ', &
              dec(i, j, k), ', error ', e, ' > bound ', tol
            call die(what//': error bound violated')
          end if
          max_err = max(max_err, e)
        end do
      end do
    end do
  end subroutine

  subroutine read_raw(path, a)
    character(*), intent(in) :: path
    real(c_float), intent(out) :: a(:, :, :)
    integer :: unit, ios
    integer(int64) :: bytes
    open (newunit=unit, file=path, access='stream', form='unformatted', status='old', &
          action='read', iostat=ios)
    if (ios /= 0) call die('cannot open '//path)
    inquire (unit=unit, size=bytes)
    if (bytes /= 4 * size(a, kind=int64)) &
      call die(path//' does not hold 2 x NY x NX float32 values')
    read (unit, iostat=ios) a
    if (ios /= 0) call die('cannot read '//path)
    close (unit)
  end subroutine

  subroutine write_raw(path, a)
    character(*), intent(in) :: path
    real(c_float), intent(in) :: a(:, :, :)
    integer :: unit, ios
    open (newunit=unit, file=path, access='stream', form='unformatted', status='replace', &
          action='write', iostat=ios)
    if (ios /= 0) call die('cannot create '//path)
    write (unit, iostat=ios) a
    if (ios /= 0) call die('cannot write '//path)
    close (unit, iostat=ios)
    if (ios /= 0) call die('cannot write '//path)
  end subroutine

  ! f0.2 may drop the leading zero (".68"); put it back.
  function ratio_text(r) result(text)
    double precision, intent(in) :: r
    character(:), allocatable :: text
    character(32) :: buf
    write (buf, '(f0.2)') r
    text = trim(buf)
    if (text(1:1) == '.') text = '0'//text
  end function

  function argument(i) result(arg)
    integer, intent(in) :: i
    character(:), allocatable :: arg
    integer :: n
    call get_command_argument(i, length=n)
    allocate (character(n) :: arg)
    call get_command_argument(i, arg)
  end function

  function dimension_arg(i, name) result(n)
    integer, intent(in) :: i
    character(*), intent(in) :: name
    integer(c_int64_t) :: n
    integer :: ios
    character(:), allocatable :: text
    text = argument(i)
    read (text, *, iostat=ios) n
    if (ios /= 0 .or. n <= 0) call die(name//' must be a positive integer, got '''//text//'''')
  end function

  ! HDF5 has already printed its error stack when err < 0.
  subroutine check(err, what)
    integer, intent(in) :: err
    character(*), intent(in) :: what
    if (err < 0) call die(what//' failed (HDF5''s error stack is printed above)')
  end subroutine

  subroutine die(msg)
    character(*), intent(in) :: msg
    write (error_unit, '(2a)') 'fortran_roundtrip: ', msg
    error stop 1
  end subroutine

end program fortran_roundtrip
