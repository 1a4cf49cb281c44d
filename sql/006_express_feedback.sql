-- Delivery preferences for the Express briefing (seed 000, its migration 010): hard filters
-- (mute/unmute) and a soft re-rank (useful/less) on an item, a kind or a topic.
CREATE TABLE express_feedback (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    verb        text NOT NULL CHECK (verb IN ('useful', 'less', 'mute', 'unmute')),
    target_kind text NOT NULL CHECK (target_kind IN ('item', 'kind', 'topic')),
    target      text NOT NULL,      -- a memory id, a briefing item kind, or a topic label
    note        text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX express_feedback_target_idx ON express_feedback (target_kind, target, created_at DESC);
