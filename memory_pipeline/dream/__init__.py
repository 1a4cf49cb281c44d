"""The dream cycle: Explorer -> precheck -> Thinker -> Consensus Panel -> Storage -> digest.

One run reads memory slices (explorer/), drops what needs no thought (precheck.py), proposes
candidates (thinker_offline.py or thinker_ollama.py), has four evaluators vote (panel.py), stores
what was accepted in one transaction (store.py) and writes a digest (digest.py). Rejections feed
the next run's Thinker (feedback.py). `cycle.py` runs the steps; `definitions.py` is the Dagster
side (asset, schedule, post_learn sensor).
"""
