"""The storage exception tree (see the package docstring)."""


class StorageError(Exception):
    pass


class SchemaTooNew(StorageError):
    pass


class StorageUnavailable(StorageError):
    pass


class Conflict(StorageError):
    """A compare-and-set or uniqueness rule refused the write; nothing was changed."""
