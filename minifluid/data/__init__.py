"""Feeding runtime: plain Python objects, threads and processes that move batches to the consumer."""
