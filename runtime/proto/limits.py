"""Every limit of the wire protocol, as a named constant next to the types that use it."""

KIB = 1024
MIB = 1024 * KIB

# Transport.
MAX_FRAME_BYTES = 4 * MIB
SEND_QUEUE_ENVELOPES = 64
WRITE_DEADLINE_SECONDS = 10.0
HANDSHAKE_TIMEOUT_SECONDS = 10.0
HEARTBEAT_SECONDS_DEFAULT = 15
READ_TIMEOUT_SECONDS = 60.0
BOOTSTRAP_RESPONSE_MAX_BYTES = 64 * KIB

# Reconnect backoff.
BACKOFF_INITIAL_SECONDS = 1.0
BACKOFF_FACTOR = 2.0
BACKOFF_MAX_SECONDS = 30.0
BACKOFF_JITTER = 0.2

# Correlation and request payloads.
MAX_CORRELATION_ID_BYTES = 128
MAX_REQUEST_PAYLOAD_BYTES = 8 * KIB
MAX_TRACE_ECHO_BYTES = 256

# Workspace operations.
MAX_READ_RESULT_BYTES = 1 * MIB
MAX_DIRECTORY_ENTRIES = 1024
MAX_ENTRY_NAME_BYTES = 255
MAX_CHUNK_BYTES = 64 * KIB
MAX_TRANSFER_BYTES = 50 * MIB
MAX_WORKSPACE_PATH_BYTES = 4096

# Committed history sent with `execution_start` (runtime/proto/history.py). Core keeps
# the history it sends within MAX_HISTORY_BYTES as encoded (escapes and entry keys
# included), which also bounds the text the Runtime counts.
MAX_HISTORY_ENTRIES = 4096
MAX_HISTORY_BYTES = 2 * MIB

# The user input one frame carries (`execution_start.input`, `prompt_steer.input`), as
# encoded: the messages a turn starts with, or one steering message. Core refuses at
# admission an input (and a turn's input not yet taken) past it. With the history, the
# resume cursor (each of its bytes at most a 6-byte JSON escape) and the envelope, an
# `execution_start` then stays within MAX_FRAME_BYTES: 512 KiB + 2 MiB + 384 KiB leaves
# more than 1 MiB for ids and keys (tests/allinone/core/orchestration/test_context.py).
MAX_INPUT_BYTES = 512 * KIB

# Workspace snapshots at Run ends (runtime/snapshots.py).
MAX_WORKSPACE_SNAPSHOTS = 8
MAX_SNAPSHOT_BYTES = 1024 * MIB

# Admission.
MAX_ADMISSION_RECORDS = 64
ADMISSION_EXPIRY_SECONDS = 5 * 60
MAX_ACTIVE_PREPARATIONS = 4
MAX_IDLE_EXECUTORS = 16
MAX_EXECUTORS = 20
EXECUTOR_IDLE_SECONDS = 60 * 60

# Receipt timers (seed 000, active input receipts).
NATIVE_WRITE_TIMEOUT_SECONDS = 10.0
WRITTEN_CONFIRMATION_TIMEOUT_SECONDS = 30.0
RECEIPT_SEND_TIMEOUT_SECONDS = 5.0
CANCELLATION_CONFIRMATION_TIMEOUT_SECONDS = 15.0
SETTLEMENT_TIMEOUT_SECONDS = 10.0

# Steering.
MAX_STEER_INPUTS_PER_RUN = 256
MAX_INPUT_ID_BYTES = 256

# Subscriptions on the Core side.
RUN_SUBSCRIPTION_BUFFER = 256
PREPARATION_SUBSCRIPTION_BUFFER = 16
MAX_PREPARATION_SUBSCRIPTIONS = 64

# Model provider and harness configuration.
MAX_API_KEY_BYTES = 16384
MAX_HARNESS_CONFIG_BYTES = 16 * KIB

# Transfers (`runtime_prepare`, `workspace_write`): stop-and-wait, one per connection.
TRANSFERS_PER_CONNECTION = 1
MAX_WRITE_FRAME_BYTES = 96 * KIB
MAX_RUNTIME_PREPARE_FRAME_BYTES = 1 * MIB
TRANSFER_BODY_WAIT_SECONDS = 120.0
TRANSFER_CORE_DEADLINE_SECONDS = 195.0
SHA256_HEX_LENGTH = 64
PLUGIN_SLOTS = 50
MAX_SOURCE_DIRECTORIES = 50
MAX_INITIALIZATION_ENTRIES = 1000
MAX_EXIT_CODE = 255

# Workspace reads and exports.
MAX_CONCURRENT_READS = 4
WORKSPACE_READ_RUNTIME_TIMEOUT_SECONDS = 12.0
WORKSPACE_READ_CORE_TIMEOUT_SECONDS = 17.0
MAX_EXPORT_CHUNK_BYTES = 64 * KIB
MAX_EXPORT_FRAME_BYTES = 96 * KIB
MAX_EXPORT_BYTES = 528 * MIB
EXPORT_DEADLINE_SECONDS = 180.0
EXPORT_CANCEL_SEND_SECONDS = 2.0

# Interactions and decisions.
INTERACTION_ACK_TIMEOUT_SECONDS = 15.0
APPLIED_DECISION_CACHE_ENTRIES = 1024
APPLIED_DECISION_TTL_SECONDS = 60 * 60

# Steering: `done` waits for the in-flight input (native write + receipt send).
DONE_INPUT_WAIT_SECONDS = NATIVE_WRITE_TIMEOUT_SECONDS + RECEIPT_SEND_TIMEOUT_SECONDS

# Suspension fencing.
QUIESCE_DRAIN_SECONDS = 5.0
SUSPEND_RECONNECT_SECONDS = 30.0
MAX_OUTSTANDING_SUSPENSIONS = 2
# Variables a Run adds to its commands' environment (its vault credentials).
MAX_COMMAND_ENVIRONMENT_ENTRIES = 64

# A harness's resume cursor (checkpoint frame, `execution_start.resume`): opaque to Core,
# kept durably with the turn's checkpoint.
MAX_RESUME_CURSOR_BYTES = 64 * KIB
