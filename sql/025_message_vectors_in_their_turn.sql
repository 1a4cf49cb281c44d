-- A message's vector is now pooled from its own tokens in its turn's forward pass (embedding/
-- passages.py, MiniLMEmbedder.embed_spans), so the semantic pass, which runs that pass to
-- segment, leaves it to the passage step for free; it is hashed by its turn's text. The
-- vectors 024 wrote embedded each message alone: they go, and the schedule's hourly catch-up
-- (days_missing_vectors) embeds them again the new way. Until it has, a context pack quotes
-- those passages whole (serving/context_pack.py).
DELETE FROM passage_piece_embeddings;
