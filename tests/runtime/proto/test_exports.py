"""`workspace_export`: a pull-based archive stream with exact offsets."""

import pytest

from runtime.proto.errors import ValidationError
from runtime.proto.exports import ExportOutcome, ExportStep, WorkspaceExport, WorkspaceExportResult
from runtime.proto.limits import MAX_EXPORT_BYTES, MAX_EXPORT_CHUNK_BYTES


@pytest.mark.parametrize(
    "request_",
    [
        WorkspaceExport(ExportStep.BEGIN, "handle", "env"),
        WorkspaceExport(ExportStep.BEGIN, "h" * 128, "e" * 128),
        WorkspaceExport(ExportStep.NEXT, offset=0),
        WorkspaceExport(ExportStep.NEXT, offset=MAX_EXPORT_BYTES),
        WorkspaceExport(ExportStep.CANCEL),
    ],
)
def test_valid_export_requests(request_: WorkspaceExport) -> None:
    request_.validate()


@pytest.mark.parametrize(
    "request_",
    [
        WorkspaceExport(ExportStep.BEGIN, "", "env"),
        WorkspaceExport(ExportStep.BEGIN, "handle", ""),
        WorkspaceExport(ExportStep.BEGIN, "h" * 129, "env"),
        WorkspaceExport(ExportStep.BEGIN, "handle", "env", offset=1),
        WorkspaceExport(ExportStep.NEXT, handle="handle", offset=1),
        WorkspaceExport(ExportStep.NEXT, offset=-1),
        WorkspaceExport(ExportStep.NEXT, offset=MAX_EXPORT_BYTES + 1),
        WorkspaceExport(ExportStep.CANCEL, offset=1),
        WorkspaceExport(ExportStep.CANCEL, environment_id="env"),
    ],
)
def test_invalid_export_requests(request_: WorkspaceExport) -> None:
    with pytest.raises(ValidationError) as caught:
        request_.validate()
    assert caught.value.code == "invalid_request"


@pytest.mark.parametrize(
    ("result", "offset"),
    [
        (WorkspaceExportResult(ExportOutcome.CHUNK, 0, b"x"), 0),
        (WorkspaceExportResult(ExportOutcome.CHUNK, 10, b"x" * MAX_EXPORT_CHUNK_BYTES), 10),
        (WorkspaceExportResult(ExportOutcome.COMPLETED, 1024), 1024),
        (WorkspaceExportResult(ExportOutcome.FAILED, 5, error_code="export_failed"), 5),
        (WorkspaceExportResult(ExportOutcome.FAILED, 5, error_code="invalid_request"), 5),
        (WorkspaceExportResult(ExportOutcome.REJECTED, 0, error_code="read_unsupported"), 0),
    ],
)
def test_valid_export_results(result: WorkspaceExportResult, offset: int) -> None:
    result.check(offset)


@pytest.mark.parametrize(
    ("result", "offset"),
    [
        (WorkspaceExportResult(ExportOutcome.CHUNK, 1, b"x"), 0),
        (WorkspaceExportResult(ExportOutcome.CHUNK, 0), 0),
        (WorkspaceExportResult(ExportOutcome.CHUNK, 0, b"x" * (MAX_EXPORT_CHUNK_BYTES + 1)), 0),
        (WorkspaceExportResult(ExportOutcome.CHUNK, MAX_EXPORT_BYTES, b"x"), MAX_EXPORT_BYTES),
        (WorkspaceExportResult(ExportOutcome.COMPLETED, 0, b"x"), 0),
        (WorkspaceExportResult(ExportOutcome.FAILED, 0), 0),
        (WorkspaceExportResult(ExportOutcome.FAILED, 0, error_code="write_rejected"), 0),
    ],
)
def test_invalid_export_results(result: WorkspaceExportResult, offset: int) -> None:
    with pytest.raises(ValidationError):
        result.check(offset)
