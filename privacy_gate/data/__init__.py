"""Tables, dataset specs applied to data, encoders and entity-aware splits."""

from privacy_gate.data.split import Splits, split_by_entity
from privacy_gate.data.table import conform, data_hash, read_table, row_hashes

__all__ = ["Splits", "conform", "data_hash", "read_table", "row_hashes", "split_by_entity"]
