"""Every constant that tunes pipeline behaviour, one module per stage, read through this package.

Everything the pipeline decides by a threshold and every retrieval weight the serving side ranks by
(`retrieval`) lives in these modules; code reads them as `tuning.NAME` (or imports NAME from here),
so a test's monkeypatch of `tuning.NAME` reaches every reader. Change a value in its stage's module
and nowhere else.
"""

from memory_pipeline.tuning.backup import *  # noqa: F403
from memory_pipeline.tuning.capture import *  # noqa: F403
from memory_pipeline.tuning.database import *  # noqa: F403
from memory_pipeline.tuning.dream import *  # noqa: F403
from memory_pipeline.tuning.embedding import *  # noqa: F403
from memory_pipeline.tuning.entities import *  # noqa: F403
from memory_pipeline.tuning.express import *  # noqa: F403
from memory_pipeline.tuning.forget import *  # noqa: F403
from memory_pipeline.tuning.inbox import *  # noqa: F403
from memory_pipeline.tuning.reinforcement import *  # noqa: F403
from memory_pipeline.tuning.relationships import *  # noqa: F403
from memory_pipeline.tuning.retrieval import *  # noqa: F403
from memory_pipeline.tuning.semantic import *  # noqa: F403
from memory_pipeline.tuning.serving import *  # noqa: F403
