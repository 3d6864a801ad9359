//! The two engines' schemas are one schema: every SQLite migration has a PostgreSQL twin
//! with the same version and name, and after both sets have run the tables, columns (names,
//! order, types, defaults) and indexes are the same.

use std::collections::BTreeSet;

use adforge_api::store::{Db, query_as};

/// SQLite type → the PostgreSQL type its twin column has (api/migrations-postgres/0001).
fn pg_type(sqlite: &str) -> &str {
    match sqlite {
        "INTEGER" => "bigint",
        "TEXT" => "text",
        "BLOB" => "bytea",
        "REAL" => "double precision",
        other => panic!("a SQLite column of type {other} has no PostgreSQL mapping yet"),
    }
}

/// A default as both engines print it, without PostgreSQL's `::type` cast.
fn default(d: Option<String>) -> Option<String> {
    d.map(|d| d.split("::").next().unwrap_or_default().to_string())
}

type Column = (String, i64, String, String, Option<String>);

async fn sqlite_columns(db: &Db) -> Vec<Column> {
    let rows: Vec<(String, i64, String, String, Option<String>)> = query_as(
        "SELECT m.name, p.cid, p.name, p.type, p.dflt_value FROM sqlite_master m, pragma_table_info(m.name) p \
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_sqlx%' ORDER BY m.name, p.cid",
    )
    .fetch_all(&db.read)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(t, pos, c, ty, d)| (t, pos, c, pg_type(&ty).to_string(), default(d)))
        .collect()
}

async fn postgres_columns(db: &Db) -> Vec<Column> {
    let rows: Vec<(String, i64, String, String, Option<String>)> = query_as(
        "SELECT CAST(table_name AS TEXT), CAST(ordinal_position AS BIGINT) - 1, CAST(column_name AS TEXT), \
         CAST(data_type AS TEXT), CAST(column_default AS TEXT) FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name NOT LIKE '\\_sqlx%' \
         ORDER BY table_name, ordinal_position",
    )
    .fetch_all(&db.read)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(t, pos, c, ty, d)| (t, pos, c, ty, default(d)))
        .collect()
}

/// (table, columns, unique) of every index, the primary keys' included.
type Index = (String, String, bool);

async fn sqlite_indexes(db: &Db) -> BTreeSet<Index> {
    let rows: Vec<(String, String, i64, String)> = query_as(
        "SELECT m.name, l.name, l.\"unique\", \
         (SELECT group_concat(name, ',') FROM (SELECT i.name FROM pragma_index_info(l.name) i ORDER BY i.seqno)) \
         FROM sqlite_master m, pragma_index_list(m.name) l \
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_sqlx%'",
    )
    .fetch_all(&db.read)
    .await
    .unwrap();
    let mut out: BTreeSet<Index> = rows
        .into_iter()
        .map(|(t, _, unique, cols)| (t, cols, unique != 0))
        .collect();
    // An INTEGER PRIMARY KEY is SQLite's rowid, not an index; PostgreSQL indexes it.
    let rowid_keys: Vec<(String, String)> = query_as(
        "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_sqlx%' \
         AND p.pk = 1 AND p.type = 'INTEGER' \
         AND (SELECT count(*) FROM pragma_table_info(m.name) k WHERE k.pk > 0) = 1",
    )
    .fetch_all(&db.read)
    .await
    .unwrap();
    out.extend(rowid_keys.into_iter().map(|(t, c)| (t, c, true)));
    out
}

async fn postgres_indexes(db: &Db) -> BTreeSet<Index> {
    let rows: Vec<(String, String, bool)> = query_as(
        "SELECT CAST(t.relname AS TEXT), \
         array_to_string(ARRAY(SELECT CAST(a.attname AS TEXT) FROM unnest(ix.indkey) WITH ORDINALITY AS k(n, o) \
           JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.n ORDER BY k.o), ','), \
         ix.indisunique \
         FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid \
         WHERE t.relnamespace = CAST(current_schema() AS regnamespace) AND t.relname NOT LIKE '\\_sqlx%'",
    )
    .fetch_all(&db.read)
    .await
    .unwrap();
    rows.into_iter().collect()
}

async fn migrations(db: &Db) -> Vec<(i64, String)> {
    query_as("SELECT version, description FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&db.read)
        .await
        .unwrap()
}

#[tokio::test]
async fn sqlite_and_postgresql_migrations_make_the_same_schema() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::open(dir.path()).await.unwrap();
    let url = crate::postgres::shared().create_database();
    let postgres = Db::connect(Some(&url), dir.path()).await.unwrap();

    let versions = migrations(&sqlite).await;
    assert!(versions.len() >= 8, "{versions:?}");
    assert_eq!(
        versions,
        migrations(&postgres).await,
        "every migration in api/migrations has a twin with the same version and name in \
         api/migrations-postgres"
    );

    let (lite, pg) = (
        sqlite_columns(&sqlite).await,
        postgres_columns(&postgres).await,
    );
    assert!(lite.iter().any(|c| c.0 == "swipe_files" && c.2 == "rev"));
    let only = |a: &[Column], b: &[Column]| -> Vec<Column> {
        a.iter().filter(|c| !b.contains(c)).cloned().collect()
    };
    assert_eq!(
        (only(&lite, &pg), only(&pg, &lite)),
        (vec![], vec![]),
        "columns only on SQLite, only on PostgreSQL (table, position, name, type, default)"
    );

    let (lite, pg) = (
        sqlite_indexes(&sqlite).await,
        postgres_indexes(&postgres).await,
    );
    assert!(lite.contains(&("images".into(), "org_id,seq".into(), false)));
    assert_eq!(
        (
            lite.difference(&pg).collect::<Vec<_>>(),
            pg.difference(&lite).collect::<Vec<_>>()
        ),
        (vec![], vec![]),
        "indexes only on SQLite, only on PostgreSQL (table, columns, unique)"
    );
}

/// `Db::point_read` (on SQLite through rusqlite on the calling thread, on PostgreSQL on a held
/// connection) decodes every column type as the pooled sqlx read does, answers `None` for no
/// row, sees each later commit (SQLite's statement is reset after each read, so no snapshot
/// stays open), and reports a statement the database refuses as an error.
#[tokio::test]
async fn a_point_read_decodes_as_a_pooled_read_and_sees_each_commit_on_both_engines() {
    type Row = (String, i64, f64, Option<String>);
    const SQL: &str = "SELECT id, n, r, z FROM point_probe WHERE id = ?";
    let dir = tempfile::tempdir().unwrap();
    let url = crate::postgres::shared().create_database();
    for db in [
        Db::open(dir.path()).await.unwrap(),
        Db::connect(Some(&url), dir.path()).await.unwrap(),
    ] {
        let engine = db.engine().name();
        for sql in [
            "CREATE TABLE point_probe (id TEXT PRIMARY KEY, n BIGINT, r DOUBLE PRECISION, z TEXT)",
            "INSERT INTO point_probe VALUES ('a', 42, 1.5, NULL)",
        ] {
            adforge_api::store::query(sql)
                .execute(&db.write)
                .await
                .unwrap();
        }
        let pooled: Option<Row> = query_as(SQL)
            .bind("a")
            .fetch_optional(&db.read)
            .await
            .unwrap();
        let first: Option<Row> = db.point_read(SQL, &["a"]).await.unwrap();
        assert_eq!(first, pooled, "{engine}");
        assert_eq!(first, Some(("a".into(), 42, 1.5, None)), "{engine}");
        let none: Option<Row> = db.point_read(SQL, &["missing"]).await.unwrap();
        assert_eq!(none, None, "{engine}");

        adforge_api::store::query("UPDATE point_probe SET n = 43, z = 'zed' WHERE id = 'a'")
            .execute(&db.write)
            .await
            .unwrap();
        for _ in 0..3 {
            let again: Row = db.point_read(SQL, &["a"]).await.unwrap().unwrap();
            assert_eq!((again.1, again.3.as_deref()), (43, Some("zed")), "{engine}");
        }
        let refused = db
            .point_read::<Row>("SELECT nope FROM point_probe", &[])
            .await;
        assert!(refused.is_err(), "{engine}: {refused:?}");
    }
}

/// SQLite's writer survives a client that hangs up while its write waits in `BEGIN
/// IMMEDIATE` for another process's write lock: before the fix the `BEGIN` completed after
/// the request was gone, the connection stayed inside that transaction, and every later
/// write failed ("cannot start a transaction within a transaction").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cancelled_inside_begin_leaves_the_sqlite_writer_usable() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    // SQLite also when the suite runs on PostgreSQL (`ADFORGE_TEST_POSTGRES=1`).
    let s = crate::support::TestServer::start_with(|a| a.db.database_url = None).await;
    let org = s.org("Cancel").await;
    // Another process holds the write lock until told to let go (a line on its stdin).
    let mut holder = Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3, sys\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             c.execute('BEGIN IMMEDIATE')\n\
             print('locked', flush=True)\n\
             sys.stdin.readline()\n\
             c.execute('ROLLBACK')\n",
        )
        .arg(s.data_dir.join("adforge.sqlite3"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs (a prerequisite of the project)");
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "locked");

    let pending = crate::support::post_brand_in_background(&s.base, &org.key, "Never made");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    if pending.is_finished() {
        let r = pending.await.unwrap();
        panic!(
            "the write did not wait for the other process: {} {}",
            r.status, r.body
        );
    }
    pending.abort();
    let _ = pending.await;
    {
        use std::io::Write;
        let mut stdin = holder.stdin.take().unwrap();
        stdin.write_all(b"go\n").unwrap();
    }
    assert!(
        tokio::task::spawn_blocking(move || holder.wait())
            .await
            .unwrap()
            .unwrap()
            .success()
    );

    for i in 0..5 {
        s.post(
            &org,
            "/v1/brands",
            serde_json::json!({"name": format!("Brand {i}")}),
        )
        .await
        .expect(201, None);
    }
    assert_eq!(s.get(&org, "/v1/brands").await.body["total_count"], 5);
}

/// A server on a fresh PostgreSQL database (also when the suite runs on SQLite), without
/// workers or the default collection; the database's URL beside it.
async fn postgres_server() -> (String, crate::support::TestServer) {
    let url = crate::postgres::shared().create_database();
    let s = crate::support::TestServer::start_with(|a| {
        a.db.database_url = Some(url.clone());
        a.workers = 0;
        a.default_collection = Some("/nonexistent-default-collection".into());
    })
    .await;
    (url, s)
}

/// Creates a brand named `name` for `org`; its id.
async fn brand(s: &crate::support::TestServer, org: &crate::support::Org, name: &str) -> String {
    s.post(org, "/v1/brands", serde_json::json!({"name": name}))
        .await
        .id()
}

/// PostgreSQL's point reads keep using the primary key after a table grows: the held
/// connections keep each statement prepared, and the generic plan PostgreSQL settles on
/// after five executions on a near-empty table may take the organisation's index (as good
/// as any on one row), kept until the next `ANALYZE` (autovacuum's, a minute or more
/// later), when every read walks all of the organisation's rows. Before the fix, `GET
/// /v1/brands/{id}` fell from some 26,000 to 840 req/s after `scripts/bench-api` created
/// 10,000 brands.
///
/// The same holds for the statement that reads several ids at once (`store::batch`) when
/// the table's statistics were taken at a few hundred rows: its first form
/// (`t.id = ANY(string_to_array(?, …))`) then settled on a plan that scans the whole table,
/// 500 rows per read before the table grew and 20,500 after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_point_reads_use_the_primary_key_after_the_table_grows() {
    let (url, s) = postgres_server().await;
    let org = s.org_unlimited("Grows").await;
    let first = s
        .post(&org, "/v1/brands", serde_json::json!({"name": "First"}))
        .await;
    let first_id = first.body["data"]["id"].as_str().unwrap().to_owned();
    let add = |prefix: &str, n: u32| {
        crate::postgres::shared()
            .psql(
                &url,
                &format!(
                    "INSERT INTO brands (id, org_id, name, created_at, updated_at) \
                     SELECT 'brand_{prefix}' || i, '{}', 'G', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' \
                     FROM generate_series(1, {n}) AS i",
                    org.id
                ),
            )
            .unwrap();
    };
    // Statistics taken at a few hundred rows, as autovacuum takes them on a young table.
    add("s", 499);
    crate::postgres::shared()
        .psql(&url, "ANALYZE brands")
        .unwrap();
    // Enough reads for every held connection to settle on a generic plan, alone and (all
    // in flight at once) together.
    for _ in 0..100 {
        s.get(&org, &format!("/v1/brands/{first_id}"))
            .await
            .expect(200, None);
    }
    let together = |prefix: &'static str, round: u32| {
        let paths: Vec<String> = (1..=40)
            .map(|i| format!("/v1/brands/brand_{prefix}{}", round * 40 + i))
            .collect();
        let s = &s;
        let org = &org;
        async move {
            let replies = futures_util::future::join_all(paths.iter().map(|p| s.get(org, p))).await;
            for (p, r) in paths.iter().zip(replies) {
                assert_eq!(r.body["data"]["name"], "G", "{p}");
            }
        }
    };
    for round in 0..12 {
        together("s", round).await;
    }
    add("g", 20000);
    for round in 0..12 {
        together("g", round).await;
    }
    for i in (1..=20000).step_by(200) {
        let r = s.get(&org, &format!("/v1/brands/brand_g{i}")).await;
        assert_eq!(r.body["data"]["name"], "G");
    }
    // A busy session's statistics reach the view within a second or so, an idle one's
    // within ten: wait until all 200 reads by id are counted on one index or the other.
    let sql = |q: &str| {
        crate::postgres::shared()
            .psql(&url, q)
            .unwrap()
            .trim()
            .to_owned()
    };
    let stats = || {
        let out = sql(
            "SELECT sum(idx_scan) || ' ' || sum(idx_tup_read) FILTER (WHERE indexrelname = 'brands_org') \
             FROM pg_stat_user_indexes WHERE indexrelname IN ('brands_org', 'brands_id_key')",
        );
        let (scans, read) = out.split_once(' ').unwrap();
        (scans.parse::<i64>().unwrap(), read.parse::<i64>().unwrap())
    };
    let mut counted = stats();
    for _ in 0..60 {
        if counted.0 >= 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        counted = stats();
    }
    let (scans, read) = counted;
    assert!(scans >= 200, "only {scans} index scans counted");
    // No read walked the table: one statement that did reads 500 rows before it grew and
    // 20,500 after.
    let walked: i64 = sql("SELECT seq_tup_read FROM pg_stat_user_tables WHERE relname = 'brands'")
        .parse()
        .unwrap();
    assert!(
        walked < 20_000,
        "{walked} rows read by scans of the whole table"
    );
    // 200 reads of one row each: a plan that walks the organisation's index reads its
    // 20,000 entries for each of the last 100.
    assert!(
        read < 20_000,
        "{read} rows read through the organisation's index by 200 reads by id"
    );
}

/// PostgreSQL's reads by id go out together when they arrive together
/// (`api/src/store/batch.rs`): each read still gets exactly its own answer (its row, a 404
/// for an unknown id, another organisation's or a deleted row), and a read sent after a
/// write returned sees that write while the batches are busy with other reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reads_sent_together_each_get_their_own_answer() {
    let (_, s) = postgres_server().await;
    let (a, b) = (s.org_unlimited("A").await, s.org_unlimited("B").await);
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(brand(&s, &a, &format!("A{i}")).await);
    }
    let theirs = brand(&s, &b, "B0").await;
    s.delete(&a, &format!("/v1/brands/{}", ids[11]))
        .await
        .expect(200, None);
    // (path, expected status, expected name): 20 rounds of every case, all in flight at once.
    let mut cases = Vec::new();
    for round in 0..20 {
        for (i, id) in ids.iter().enumerate() {
            let (status, name) = if i == 11 {
                (404, None)
            } else {
                (200, Some(format!("A{i}")))
            };
            cases.push((format!("/v1/brands/{id}"), status, name));
        }
        cases.push((format!("/v1/brands/{theirs}"), 404, None));
        cases.push((format!("/v1/brands/brand_missing{round}"), 404, None));
    }
    let replies = futures_util::future::join_all(cases.iter().map(|(p, _, _)| s.get(&a, p))).await;
    for ((path, status, name), r) in cases.iter().zip(replies) {
        assert_eq!(r.status, *status, "{path}: {}", r.body);
        if let Some(name) = name {
            assert_eq!(r.body["data"]["name"], name.as_str(), "{path}");
        }
    }
    // Reads of another brand keep the batches busy while each new brand is read back.
    let busy = &ids[0];
    for i in 0..30 {
        let id = brand(&s, &a, &format!("New {i}")).await;
        let mut reads: Vec<_> = (0..16).map(|_| format!("/v1/brands/{busy}")).collect();
        reads.push(format!("/v1/brands/{id}"));
        let replies = futures_util::future::join_all(reads.iter().map(|p| s.get(&a, p))).await;
        let last = replies.last().unwrap();
        assert_eq!(
            last.status, 200,
            "a brand read back at once after its create"
        );
        assert_eq!(last.body["data"]["name"], format!("New {i}"));
        assert!(replies.iter().all(|r| r.status == 200));
    }
}

/// SQLite's writers commit in groups (`api/src/store/writer.rs`): concurrent write
/// transactions share one SQLite transaction, each in a savepoint. Each keeps exactly its
/// own writes, all or none: a committed one's rows are there (and readable on another
/// connection once its `commit` returns), a rolled-back or failed one's are not, and one
/// cancelled at any point leaves both of its rows or neither, never stalling the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writers_committed_together_each_keep_exactly_their_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    writers_committed_together(Db::open(dir.path()).await.unwrap()).await;
}

/// The same on PostgreSQL, where one organisation's writers share a transaction (and so one
/// WAL flush): and they do share it, several writers' rows carry one transaction id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_writers_of_one_organisation_commit_together_each_keeping_their_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let url = crate::postgres::shared().create_database();
    let db = Db::connect(Some(&url), dir.path()).await.unwrap();
    let committed = writers_committed_together(db.clone()).await;
    let transactions: i64 = adforge_api::store::query_scalar("SELECT count(DISTINCT x) FROM g")
        .fetch_one(&db.read)
        .await
        .unwrap();
    assert!(
        transactions < committed,
        "{committed} writers committed in {transactions} transactions: none shared one"
    );
}

/// More organisations write at once than a process holds writers for (eight, in
/// `store::writer`): the others' writes go through the pool, an idle organisation's writer
/// makes way for a new one, every write commits, and the node's connections stay bounded
/// (the pool's 16, 8 held readers, 8 writers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_writes_of_more_organisations_than_held_writers_all_commit() {
    use adforge_api::store::query;

    let dir = tempfile::tempdir().unwrap();
    let url = crate::postgres::shared().create_database();
    let db = Db::connect(Some(&url), dir.path()).await.unwrap();
    query("CREATE TABLE m (org TEXT NOT NULL, v BIGINT NOT NULL)")
        .execute(&db.write)
        .await
        .unwrap();
    // Twenty organisations with four writers each at once, then twenty others one by one.
    let write = |org: String, v: i64| {
        let db = db.clone();
        tokio::spawn(async move {
            let mut tx = db.begin_write_for(&org).await.unwrap();
            query("INSERT INTO m (org, v) VALUES (?, ?)")
                .bind(&org)
                .bind(v)
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        })
    };
    let at_once: Vec<_> = (0..80)
        .map(|i| write(format!("org_{}", i % 20), i))
        .collect();
    for t in at_once {
        t.await.unwrap();
    }
    for i in 0..20 {
        write(format!("org_late_{i}"), 1_000 + i).await.unwrap();
    }
    let rows: i64 = adforge_api::store::query_scalar("SELECT count(*) FROM m")
        .fetch_one(&db.read)
        .await
        .unwrap();
    assert_eq!(rows, 100);
    let per_org: Vec<(String, i64)> =
        query_as("SELECT org, count(*) FROM m GROUP BY org HAVING count(*) <> 4 AND org NOT LIKE 'org_late_%'")
            .fetch_all(&db.read)
            .await
            .unwrap();
    assert!(per_org.is_empty(), "{per_org:?}");
    let connections: i64 = adforge_api::store::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()",
    )
    .fetch_one(&db.read)
    .await
    .unwrap();
    assert!(
        connections <= 32,
        "{connections} connections to the database"
    );
}

/// Six rounds of 90 concurrent writers of two rows each (one organisation's on PostgreSQL),
/// each committing, rolling back, failing or being cancelled; checks each kept exactly its
/// own writes. Each row records its transaction's id in `x` on PostgreSQL (0 on SQLite).
/// Returns how many writers committed (the cancelled ones that did included).
async fn writers_committed_together(db: Db) -> i64 {
    use adforge_api::store::query;

    let postgres = db.engine() == adforge_api::store::Engine::Postgres;
    query("CREATE TABLE g (v BIGINT PRIMARY KEY, x BIGINT NOT NULL)")
        .execute(&db.write)
        .await
        .unwrap();
    let insert = if postgres {
        "INSERT INTO g (v, x) VALUES (?, txid_current())"
    } else {
        "INSERT INTO g (v, x) VALUES (?, 0)"
    };
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Fate {
        Commit,
        RollBack,
        Fail,
        Cancel,
    }
    let fate = |i: i64| match i % 9 {
        0 => Fate::RollBack,
        4 => Fate::Fail,
        7 => Fate::Cancel,
        _ => Fate::Commit,
    };
    for round in 0..6i64 {
        let tasks: Vec<_> = (round * 100..round * 100 + 90)
            .map(|i| {
                let db = db.clone();
                let task = tokio::spawn(async move {
                    let mut tx = db.begin_write_for("org_g").await.unwrap();
                    for v in [i, i + 10_000] {
                        query(insert).bind(v).execute(&mut *tx).await.unwrap();
                    }
                    match fate(i) {
                        Fate::RollBack => drop(tx),
                        Fate::Fail => {
                            let e = query(insert).bind(i).execute(&mut *tx).await;
                            assert!(e.is_err(), "a duplicate key is refused");
                            drop(tx);
                        }
                        Fate::Commit | Fate::Cancel => {
                            if let Err(e) = tx.commit().await {
                                panic!("writer {i}'s commit failed: {e}");
                            }
                            let seen: i64 = adforge_api::store::query_scalar(
                                "SELECT count(*) FROM g WHERE v IN (?, ?)",
                            )
                            .bind(i)
                            .bind(i + 10_000)
                            .fetch_one(&db.read)
                            .await
                            .unwrap();
                            assert_eq!(seen, 2, "writer {i}'s rows once its commit returned");
                        }
                    }
                });
                (i, task)
            })
            .collect();
        for (i, task) in &tasks {
            if fate(*i) == Fate::Cancel {
                tokio::time::sleep(std::time::Duration::from_micros(300)).await;
                task.abort();
            }
        }
        for (i, task) in tasks {
            let done = tokio::time::timeout(std::time::Duration::from_secs(30), task)
                .await
                .unwrap_or_else(|_| panic!("writer {i} never finished"));
            if fate(i) != Fate::Cancel {
                done.unwrap();
            }
        }
    }
    let rows: Vec<(i64, i64)> = query_as("SELECT v, x FROM g ORDER BY v")
        .fetch_all(&db.read)
        .await
        .unwrap();
    let rows: std::collections::BTreeMap<i64, i64> = rows.into_iter().collect();
    let mut committed = 0;
    for round in 0..6i64 {
        for i in round * 100..round * 100 + 90 {
            let (a, b) = (rows.get(&i), rows.get(&(i + 10_000)));
            match fate(i) {
                Fate::Commit => assert!(a.is_some() && b.is_some(), "writer {i} committed"),
                Fate::RollBack | Fate::Fail => {
                    assert!(a.is_none() && b.is_none(), "writer {i} rolled back");
                }
                Fate::Cancel => {
                    assert_eq!(a.is_some(), b.is_some(), "writer {i}: both rows or neither")
                }
            }
            if a.is_some() {
                assert_eq!(a, b, "writer {i}'s rows in one transaction");
                committed += 1;
            }
        }
    }
    committed
}

/// A pooled PostgreSQL connection is pinged at acquire only after it sat idle for a second
/// (`store::pool_options`): connections the server closed meanwhile (a restart, a proxy's
/// timeout; here `pg_terminate_backend`) are found and replaced, and the list reads that
/// take them answer as before. Held read connections are not pinged: a point read that
/// finds its connection closed reads again on a new one (`Db::point_read`); nor are held
/// writer connections, whose `BEGIN` opens a new one once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pooled_connections_closed_while_idle_are_replaced() {
    let (url, s) = postgres_server().await;
    let org = s.org_unlimited("Idle").await;
    let one = format!("/v1/brands/{}", brand(&s, &org, "Kept").await);
    // Lists (pooled read transactions) and reads by id (held connections), 8 of each at once.
    let lists = || async {
        let paths = ["/v1/brands", one.as_str()];
        let replies =
            futures_util::future::join_all((0..16).map(|i| s.get(&org, paths[i % 2]))).await;
        replies
            .iter()
            .map(|r| r.status.as_u16())
            .collect::<Vec<_>>()
    };
    assert_eq!(lists().await, vec![200; 16]);
    // One at a time, the reads by id open every held connection in turn.
    for _ in 0..16 {
        s.get(&org, &one).await.expect(200, None);
    }
    // A write opens the organisation's held writer connection (`store::writer`).
    brand(&s, &org, "Before").await;
    let closed = crate::postgres::shared()
        .psql(
            &url,
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .unwrap();
    assert!(closed.trim().parse::<i64>().unwrap() > 0, "{closed}");
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    assert_eq!(
        lists().await,
        vec![200; 16],
        "reads after the server closed idle connections"
    );
    // The held writer is never pinged either: its `BEGIN` finds it closed and opens another.
    let posts = futures_util::future::join_all((0..4).map(|i| {
        s.post(
            &org,
            "/v1/brands",
            serde_json::json!({"name": format!("After {i}")}),
        )
    }))
    .await;
    let statuses: Vec<u16> = posts.iter().map(|r| r.status.as_u16()).collect();
    assert_eq!(
        statuses,
        vec![201; 4],
        "writes after the server closed idle connections"
    );
}
