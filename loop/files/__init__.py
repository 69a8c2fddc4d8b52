"""What reads and writes files: transcripts, journals, the runs store, Markdown export."""
