"""Named records kept as one JSON file each in a directory of the catalog (views, UDFs).

Each record is a dataclass with a ``name``; a record is written atomically (a temporary file
renamed over the old one), so a reader sees the old record or the new one, never half.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, ClassVar, Generic, TypeVar

from dltrace.errors import CatalogError
from dltrace.recovery import write_json_atomically
from dltrace.storage import Location

Record = TypeVar("Record")


class JsonStore(Generic[Record]):
    """The records of one kind in ``directory``, ``<name>.json`` each."""

    record: ClassVar[type]  # the dataclass a file holds
    kind: ClassVar[str]  # what a record is, for errors: "view"
    remedy: ClassVar[str] = ""  # what to do about an unreadable record, for errors

    def __init__(self, directory: Location) -> None:
        self.directory = directory

    def file(self, name: str) -> Location:
        return self.directory / f"{name.lower()}.json"

    def all(self) -> dict[str, Record]:
        records: dict[str, Any] = {}
        for file in self.directory.glob("*.json"):
            try:
                record = self.record(**json.loads(file.read_text()))
            except (OSError, ValueError, TypeError) as error:
                raise CatalogError(f"cannot read {self.kind} {file}: {error}{self.remedy}") from None
            records[record.name] = record
        return records

    def write(self, record: Record) -> Record:
        write_json_atomically(self.file(record.name), asdict(record))
        return record
