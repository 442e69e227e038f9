"""The CUDA caching allocator: its probe, the allocator history it records, and the snapshot
parsing that names the lines that allocated the blocks that grew."""
