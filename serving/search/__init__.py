"""Hybrid search, exactly as the seed specifies, over the read-only role's connection.

1. Each channel ranks passages (memory_passages: a memory cut at turn boundaries into pieces
   that fit the embedding window): Okapi BM25 over each passage's full-text entry, and cosine
   over the serving space's HNSW index of passage vectors. A memory takes the rank of its best
   passage in that channel, so a long segment is found by whichever of its turns matches; the
   same CANDIDATES_PER_CHANNEL memories per channel whatever the output limit.
2. Reciprocal Rank Fusion (k = 60) of the two memory rankings.
3. The utility rerank over the whole fused pool (`serving/rerank.py`).
4. Exact-content dedup, then soft diversity (at most two results per source task first).
5. The limit, applied last: a larger limit only appends (prefix stability).
6. Temporal context: the top result's neighbours within 24 hours, appended and marked.
7. Retrieval events for the returned results, which the pipeline folds into access counts.

Every hit carries the passages that matched it (best first by the RRF of their passage ranks),
with their turn ordinals and native ids: what a context pack quotes.

The modules are the steps: `filters` (the hard filters as SQL, and how narrow they are),
`bm25` and `vector` (the two channels, each returning a `channel.ChannelResult`), `candidates`
(the fused memories' rows and the temporal neighbours), `provenance` (provenance chains and
matched passages) and `pipeline` (`search` itself).
"""

from serving.search.bm25 import RANK_PASSAGES_BY_MEMORY, bm25_channel, bm25_chosen_statement
from serving.search.channel import EMPTY, ChannelResult
from serving.search.filters import filter_sql, filtered_memories
from serving.search.pipeline import QueryEmbedder, record_retrievals, search
from serving.search.provenance import matched_passages, passage_details, provenance
from serving.search.vector import vector_channel, vector_statement

__all__ = [
    "EMPTY",
    "RANK_PASSAGES_BY_MEMORY",
    "ChannelResult",
    "QueryEmbedder",
    "bm25_channel",
    "bm25_chosen_statement",
    "filter_sql",
    "filtered_memories",
    "matched_passages",
    "passage_details",
    "provenance",
    "record_retrievals",
    "search",
    "vector_channel",
    "vector_statement",
]
