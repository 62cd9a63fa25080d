"""``paddle.distributed`` as paddle 2.0 scripts use it on one machine: the file-fed datasets
(``paddle.distributed.QueueDataset`` / ``InMemoryDataset``, set up with ``init(...)``)."""
from ..data.file_dataset import InMemoryDataset, QueueDataset

__all__ = ["InMemoryDataset", "QueueDataset"]
