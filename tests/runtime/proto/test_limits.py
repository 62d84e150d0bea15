"""Every limit the seed names is a named constant with the seed's value."""

from runtime.proto import limits


def test_the_seed_limits_are_named_constants() -> None:
    assert limits.MAX_REQUEST_PAYLOAD_BYTES == 8 * 1024
    assert limits.MAX_CORRELATION_ID_BYTES == 128
    assert limits.MAX_READ_RESULT_BYTES == 1024 * 1024
    assert limits.MAX_FRAME_BYTES == 4 * 1024 * 1024
    assert limits.MAX_DIRECTORY_ENTRIES == 1024
    assert limits.MAX_ENTRY_NAME_BYTES == 255
    assert limits.MAX_CHUNK_BYTES == 64 * 1024
    assert limits.MAX_TRANSFER_BYTES == 50 * 1024 * 1024
    assert limits.TRANSFERS_PER_CONNECTION == 1
    assert limits.MAX_ADMISSION_RECORDS == 64
    assert limits.ADMISSION_EXPIRY_SECONDS == 5 * 60


def test_the_receipt_timers_are_named_constants() -> None:
    assert limits.NATIVE_WRITE_TIMEOUT_SECONDS == 10
    assert limits.WRITTEN_CONFIRMATION_TIMEOUT_SECONDS == 30
    assert limits.RECEIPT_SEND_TIMEOUT_SECONDS == 5
    assert limits.CANCELLATION_CONFIRMATION_TIMEOUT_SECONDS == 15
    assert limits.DONE_INPUT_WAIT_SECONDS == 15


def test_the_read_result_fits_its_frame_even_as_base64() -> None:
    assert limits.MAX_READ_RESULT_BYTES * 4 // 3 + 4 * 1024 < limits.MAX_FRAME_BYTES
    assert limits.MAX_CHUNK_BYTES * 4 // 3 + 1024 < limits.MAX_WRITE_FRAME_BYTES
