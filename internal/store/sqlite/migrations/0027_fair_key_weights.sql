-- Weights per fairness key (issue 32): a key of weight W takes W turns a round of a queue's
-- fair claims. A key without a row here has weight 1; a claim reads the rows of the keys it
-- reads only. fair_keys.used counts the turns a key used of its current round: a claim that
-- leaves it turns keeps its served, so it is served first again.
CREATE TABLE fair_key_weights (
    queue        TEXT    NOT NULL,
    fairness_key TEXT    NOT NULL,
    weight       INTEGER NOT NULL CHECK (weight > 1),
    PRIMARY KEY (queue, fairness_key)
) WITHOUT ROWID;

ALTER TABLE fair_keys ADD COLUMN used INTEGER NOT NULL DEFAULT 0;
