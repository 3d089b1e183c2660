from .format import (
    RecordHeader,
    RecordImage,
    encode_record,
    parse_header,
    read_header,
    write_record,
)
from .manifest import check_manifest
from .summary import DatasetSummary

__all__ = [
    "RecordHeader",
    "RecordImage",
    "encode_record",
    "parse_header",
    "read_header",
    "write_record",
    "check_manifest",
    "DatasetSummary",
]
