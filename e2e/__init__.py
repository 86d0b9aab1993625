"""End-to-end harness: a real LangBot 4.11.2 host with the LongTermMemory plugin attached."""
