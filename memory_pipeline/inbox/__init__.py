"""The inbox stage (issue 33): web articles, documents and video transcripts as searchable
sources. See store.py for the flow and sql/034_inbox.sql for why a document is not a task."""
