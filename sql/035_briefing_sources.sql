-- The daily briefing tells of new inbox sources that bear on the user's work (issue 33): an
-- article, document or video transcript stored or revised in the briefing's window with a live
-- edge to an agent memory is an item of kind 'source'.
ALTER TABLE briefing_items DROP CONSTRAINT briefing_items_kind_check;
ALTER TABLE briefing_items ADD CONSTRAINT briefing_items_kind_check CHECK (kind IN (
    'synthesis', 'contradiction', 'superseded', 'resurfaced', 'digest', 'question', 'source'));
