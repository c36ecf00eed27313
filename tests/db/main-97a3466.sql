-- A database written by watcher at main 97a3466 (before the store/schema split), dumped
-- with sqlite3's iterdump. tests/store/test_store_schema.py opens it with today's code.
BEGIN TRANSACTION;
CREATE TABLE "_sqlite_migrations" (
   "id" INTEGER PRIMARY KEY,
   "migration_set" TEXT,
   "name" TEXT,
   "applied_at" TEXT
);
INSERT INTO "_sqlite_migrations" VALUES(1,'watcher','m001_initial','2026-12-01 16:02:15.725490+00:00');
INSERT INTO "_sqlite_migrations" VALUES(2,'watcher','m030_comments','2026-12-01 16:02:15.726778+00:00');
INSERT INTO "_sqlite_migrations" VALUES(3,'watcher','m010_serve_heartbeat','2026-12-01 16:02:15.731606+00:00');
INSERT INTO "_sqlite_migrations" VALUES(4,'watcher','m040_state_spans','2026-12-01 16:02:15.732614+00:00');
INSERT INTO "_sqlite_migrations" VALUES(5,'watcher','m041_smoke_runs_newest_first','2026-12-01 16:02:15.733210+00:00');
INSERT INTO "_sqlite_migrations" VALUES(6,'watcher','m042_smoke_triggers','2026-12-01 16:02:15.733674+00:00');
CREATE TABLE comment_outbox (
            event_id INTEGER PRIMARY KEY, page_id TEXT, repo TEXT, issue INTEGER,
            marker TEXT NOT NULL, body TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',  -- pending | posted | failed
            comment_id INTEGER, comment_url TEXT, found INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
            created_at TEXT, attempted_at TEXT, posted_at TEXT);
INSERT INTO "comment_outbox" VALUES(1,'a','o/r',3,'<!-- m -->','body','pending',NULL,NULL,0,0,NULL,'2026-12-01T10:00:06Z',NULL,NULL);
CREATE TABLE cycles (
            id INTEGER PRIMARY KEY, started_at TEXT, finished_at TEXT, mode TEXT,
            items INTEGER, changes INTEGER, requests INTEGER, not_modified INTEGER,
            errors INTEGER, duration_s REAL, rate_limit INTEGER, rate_remaining INTEGER,
            rate_reset INTEGER, error TEXT);
INSERT INTO "cycles" VALUES(1,'2026-12-01T10:00:00Z','2026-12-01T10:00:05Z','poll',1,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE etags (
            url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT, body TEXT, link TEXT,
            fetched_at TEXT);
INSERT INTO "etags" VALUES('https://api.github.com/x','W/1',NULL,'{}',NULL,'2026-12-01T10:00:00Z');
CREATE TABLE events (
            id INTEGER PRIMARY KEY, at TEXT NOT NULL, cycle_id INTEGER, kind TEXT NOT NULL,
            subject TEXT NOT NULL, old TEXT, new TEXT, message TEXT, data TEXT);
INSERT INTO "events" VALUES(1,'2026-12-01T10:00:05Z',1,'item','vllm-project/vllm#1',NULL,'open','opened','{"x": 1}');
CREATE TABLE heartbeats (
            name TEXT PRIMARY KEY, pid INTEGER, host TEXT, started_at TEXT, beat_at TEXT,
            next_run_at TEXT, interval_s REAL, cycles INTEGER NOT NULL DEFAULT 0,
            stopped_at TEXT, stop_reason TEXT);
INSERT INTO "heartbeats" VALUES('serve',1,'h','2026-12-01T10:00:00Z',NULL,NULL,NULL,0,NULL,NULL);
CREATE TABLE items (
            id TEXT PRIMARY KEY, repo TEXT, kind TEXT, number INTEGER, label TEXT,
            title TEXT, state TEXT, url TEXT, superseded_by INTEGER, superseded_state TEXT,
            in_release TEXT, details TEXT, fingerprint TEXT,
            stale INTEGER NOT NULL DEFAULT 0, error TEXT, moved_to TEXT,
            checked_at TEXT, changed_at TEXT, updated_at TEXT);
INSERT INTO "items" VALUES('vllm-project/vllm#1','vllm-project/vllm','pr',1,'fix','Fix','open',NULL,NULL,NULL,NULL,'{"a": 1}',NULL,0,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE notify_state (key TEXT PRIMARY KEY, value TEXT);
INSERT INTO "notify_state" VALUES('k','v');
CREATE TABLE observations (
            id INTEGER PRIMARY KEY, item_id TEXT NOT NULL, cycle_id INTEGER, observed_at TEXT,
            state TEXT, title TEXT, fingerprint TEXT, data TEXT, error TEXT);
INSERT INTO "observations" VALUES(1,'vllm-project/vllm#1',1,'2026-12-01T10:00:00Z','open','Fix','f1','{"in_release": "v1"}',NULL);
INSERT INTO "observations" VALUES(2,'vllm-project/vllm#1',2,'2026-12-01T11:00:00Z','open','Fix','f1','{}',NULL);
CREATE TABLE page_versions (
            id INTEGER PRIMARY KEY, page_id TEXT NOT NULL, at TEXT, from_event INTEGER,
            to_event INTEGER, digest TEXT);
INSERT INTO "page_versions" VALUES(1,'a','2026-12-01T10:00:05Z',0,1,'d1');
CREATE TABLE smoke_runs (
            run_id TEXT PRIMARY KEY, recipe TEXT, outcome TEXT, signature TEXT,
            matches_target INTEGER, started_at TEXT, finished_at TEXT, doc TEXT);
INSERT INTO "smoke_runs" VALUES('r-1','r','passed',NULL,1,'2026-12-01T10:00:00Z','2026-12-01T10:01:00Z','{"finished_at": "2026-12-01T10:01:00Z", "hardware": {"matches_target": true}, "outcome": "passed", "recipe": "r", "run_id": "r-1", "started_at": "2026-12-01T10:00:00Z"}');
CREATE TABLE smoke_triggers (
            recipe TEXT PRIMARY KEY,
            state TEXT NOT NULL,  -- waiting | dispatched
            reasons TEXT NOT NULL DEFAULT '[]', since TEXT, updated_at TEXT,
            run_id TEXT, actions_run_id INTEGER, actions_run_url TEXT, dispatched_at TEXT,
            note TEXT, attempts INTEGER NOT NULL DEFAULT 0);
INSERT INTO "smoke_triggers" VALUES('r','waiting','["ready"]','2026-12-01T10:00:00Z',NULL,NULL,NULL,NULL,NULL,NULL,0);
CREATE TABLE state_spans (
            id INTEGER PRIMARY KEY, item_id TEXT NOT NULL, state TEXT, fingerprint TEXT,
            error TEXT, title TEXT, data TEXT, from_at TEXT, to_at TEXT,
            count INTEGER NOT NULL, last_observation INTEGER NOT NULL);
INSERT INTO "state_spans" VALUES(1,'vllm-project/vllm#1','open','f1',NULL,'Fix','{"in_release": "v1", "superseded_by": null, "superseded_state": null}','2026-12-01T10:00:00Z','2026-12-01T11:00:00Z',2,2);
CREATE TABLE statuses (
            key TEXT PRIMARY KEY, status TEXT, since TEXT, reason TEXT, updated_at TEXT);
INSERT INTO "statuses" VALUES('page:a','blocked','2026-12-01T10:00:05Z','why','2026-12-01T10:00:05Z');
CREATE TABLE sticky_comments (
            page_id TEXT NOT NULL, repo TEXT NOT NULL, issue INTEGER NOT NULL,
            comment_id INTEGER, comment_url TEXT, digest TEXT, updated_at TEXT,
            checked_at TEXT, last_error TEXT, error_at TEXT,
            PRIMARY KEY (page_id, repo, issue));
INSERT INTO "sticky_comments" VALUES('a','o/r',3,9,NULL,'d',NULL,NULL,NULL,NULL);
CREATE UNIQUE INDEX "idx__sqlite_migrations_migration_set_name"
    ON "_sqlite_migrations" ("migration_set", "name");
CREATE INDEX observations_item ON observations(item_id, id);
CREATE INDEX smoke_runs_recipe ON smoke_runs(recipe, started_at);
CREATE INDEX comment_outbox_state ON comment_outbox(state, event_id);
CREATE INDEX state_spans_item ON state_spans(item_id, id);
CREATE INDEX smoke_runs_started ON smoke_runs(started_at, run_id);
CREATE INDEX smoke_runs_recipe_started ON smoke_runs(recipe, started_at, run_id);
COMMIT;
