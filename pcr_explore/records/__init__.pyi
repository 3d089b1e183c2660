from .format import (
    RecordHeader,
    RecordImage,
    encode_record,
    parse_header,
    read_header,
    write_record,
)
from .manifest import Manifest, RecordEntry, check_manifest
from .summary import DatasetSummary

__all__ = [
    "RecordHeader",
    "RecordImage",
    "encode_record",
    "parse_header",
    "read_header",
    "write_record",
    "check_manifest",
    "Manifest",
    "RecordEntry",
    "DatasetSummary",
]
