//! PostgreSQL point reads by id, answered together (issue 26).
//!
//! On PostgreSQL a `GET /v1/{resource}/{id}` is a round trip to a server that shares the
//! machine's cores, and the server's cost per statement (its wake-up, parse of the message,
//! executor start-up, the reply, its system calls) is many times the cost of finding one row
//! by its unique index. Under load many such reads wait at once, so they are sent together:
//! every read by id joins one queue, and the driver tasks ([`DRIVERS`]) each take whatever
//! the queue holds (up to [`MOST`]), group it by statement and ask each group's rows with
//! one statement that looks each id up on its unique index. When a driver is free a read goes
//! out alone at once, so a quiet server adds no wait; when all drivers are busy the queue
//! grows and the next statement carries all of it.
//!
//! **Measured** (`docs/performance.md` §1, fifth pass): reading one brand over and over, the
//! read went from 21.8 % to 43.5 % of `/healthz` (the waiting reads share one row). Reading
//! 500 distinct brands it did not move at first: the batch statement's generic plan scanned
//! the whole table (see [`super::PointTexts`]); with one index lookup per id it went from
//! 1.5 % to 35–41 % of `/healthz` on the bench's 45,000 brands, and from 21–33 % to 42–47 %
//! on 500 (sixth pass).
//!
//! The ids travel as one text parameter split by `string_to_array`, since sqlx's `Any`
//! driver binds no arrays.
//!
//! **Same answers.** A read is sent after it joined the queue, so it sees every commit that
//! returned before its request was read, as a read of its own would. The organisation is
//! still checked on each row by the caller ([`super::Db::point_read_of`]).
//!
//! **Failures.** A batch that fails (a connection lost, a statement cancelled) answers
//! every read in it with "failed", and each then runs its statement alone on a held
//! connection ([`super::Db::point_read`]), which reports its own error: a batch never turns
//! one read's problem into a different error for another.
//!
//! The drivers are spawned on the first read and end when the [`super::Db`] is dropped
//! (the queue's sender goes with it).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use sqlx::Row as _;
use sqlx::any::AnyRow;
use tokio::sync::{Mutex, mpsc, oneshot};

use super::readers::Readers;

/// Driver tasks per node: how many batches may be in flight at once (each holds one of the
/// held read connections while its statement runs). One: while its statement is out, every
/// read that arrives joins the next, so the batches are as large as the load makes them. On
/// the 2-core bench machine, with PostgreSQL beside the server, 1, 2, 4 and 8 drivers read
/// at 42.9, 40.4, 37.1 and 37.4 % of `/healthz` (`docs/performance.md` §1).
const DRIVERS: usize = 1;

/// The most reads one statement carries.
const MOST: usize = 256;

/// Joins the ids of one batch into the statement's single text parameter: the unit
/// separator, which no id this service makes contains (an id that does is read alone).
pub(super) const SEPARATOR: char = '\u{1f}';

/// What a read is told: its row (or `None` when no row has its id), or that the batch failed.
pub(super) type Answer = Result<Option<AnyRow>, ()>;

/// One read waiting in the queue.
struct Ask {
    /// The batch form of the statement (see [`Batches::read`]).
    sql: &'static str,
    id: String,
    answer: oneshot::Sender<Answer>,
}

/// The queue of one [`super::Db`] and its drivers.
pub(super) struct Batches {
    readers: Arc<Readers>,
    queue: OnceLock<mpsc::UnboundedSender<Ask>>,
}

impl Batches {
    pub(super) fn new(readers: Arc<Readers>) -> Self {
        Self {
            readers,
            queue: OnceLock::new(),
        }
    }

    /// Queues the read of `id` by `sql`, a statement whose only parameter is the ids joined by
    /// [`SEPARATOR`] and whose rows carry their id as `batch_key`: its answer comes on the
    /// returned receiver (the row, still to be decoded by the reader, so that decoding runs
    /// on the readers' tasks and not on the driver's). `None` when the read cannot be queued:
    /// an id holding the separator, or drivers that have stopped with their runtime (the
    /// receiver then fails).
    pub(super) fn read(&self, sql: &'static str, id: &str) -> Option<oneshot::Receiver<Answer>> {
        if id.contains(SEPARATOR) {
            return None;
        }
        let (answer, answered) = oneshot::channel();
        let queue = self.queue.get_or_init(|| {
            let (send, receive) = mpsc::unbounded_channel();
            let receive = Arc::new(Mutex::new(receive));
            for _ in 0..DRIVERS {
                tokio::spawn(drive(receive.clone(), self.readers.clone()));
            }
            send
        });
        queue
            .send(Ask {
                sql,
                id: id.to_owned(),
                answer,
            })
            .ok()?;
        Some(answered)
    }
}

/// One driver: takes what the queue holds, answers it, again, until the queue's sender is gone.
async fn drive(queue: Arc<Mutex<mpsc::UnboundedReceiver<Ask>>>, readers: Arc<Readers>) {
    let mut asks = Vec::with_capacity(MOST);
    loop {
        if queue.lock().await.recv_many(&mut asks, MOST).await == 0 {
            return;
        }
        // Group by statement, keeping each group's first-come order.
        while !asks.is_empty() {
            let sql = asks[0].sql;
            let (group, rest): (Vec<Ask>, Vec<Ask>) =
                asks.drain(..).partition(|a| std::ptr::eq(a.sql, sql));
            asks = rest;
            answer_group(&readers, sql, group).await;
        }
    }
}

async fn answer_group(readers: &Readers, sql: &str, group: Vec<Ask>) {
    let mut ids: Vec<&str> = group.iter().map(|a| a.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let joined = ids.join(&SEPARATOR.to_string());
    let rows = match readers.get().await {
        Ok(mut reader) => {
            let rows = match reader.conn() {
                Ok(conn) => super::query(sql).bind(joined).fetch_all(conn).await,
                Err(e) => Err(e),
            };
            reader.check(rows).ok()
        }
        Err(_) => None,
    };
    let Some(rows) = rows else {
        group.into_iter().for_each(|a| drop(a.answer.send(Err(()))));
        return;
    };
    // Each id's askers, in order; the last of them gets the row itself, the others copies.
    let mut askers: HashMap<String, Vec<oneshot::Sender<Answer>>> = HashMap::new();
    for ask in group {
        askers.entry(ask.id).or_default().push(ask.answer);
    }
    for row in rows {
        let Some(mut waiting) = row
            .try_get::<String, _>("batch_key")
            .ok()
            .and_then(|k| askers.remove(&k))
        else {
            continue;
        };
        let last = waiting.pop();
        for answer in waiting {
            drop(answer.send(Ok(Some(row.clone()))));
        }
        if let Some(answer) = last {
            drop(answer.send(Ok(Some(row))));
        }
    }
    // Ids no row has.
    for answer in askers.into_values().flatten() {
        drop(answer.send(Ok(None)));
    }
}
