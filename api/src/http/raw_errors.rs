//! Our error shape for the requests hyper refuses before any of our code runs.
//!
//! hyper's HTTP/1 server parses the request line and headers itself. When that fails (a
//! `Content-Length` that is not a number below 2^64, a malformed header line or method, a
//! request line longer than it reads, too many headers) it writes an automatic response
//! (`400`, `414` or `431`, `connection: close`, `content-length: 0`) and closes the
//! connection: no service, layer or fallback is called, and neither hyper nor axum has a
//! setting to supply that response's body.
//!
//! So the answer is made one level down, on the connection: [`JsonErrorListener`] hands
//! hyper a wrapped socket that recognises that one automatic response as it is written and
//! writes, in its place, the same status with our `{error, meta}` JSON body, a request id
//! (also in `X-Request-Id`, and logged) and `connection: close`. Every response of our
//! router carries `x-request-id`, so none of them can be mistaken for hyper's.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::error::{ErrorBody, ErrorCode, ErrorObject};
use crate::http::envelope::Meta;

/// A TCP listener whose connections answer hyper's own parse-error responses with our
/// error JSON. Use it in place of the `TcpListener` given to `axum::serve`.
pub struct JsonErrorListener(pub TcpListener);

impl axum::serve::Listener for JsonErrorListener {
    type Io = JsonErrorIo<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = axum::serve::Listener::accept(&mut self.0).await;
        (JsonErrorIo::new(io), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A connection that replaces hyper's automatic, body-less error response with ours.
pub struct JsonErrorIo<IO> {
    inner: IO,
    /// Our response being written in place of hyper's: bytes, how many are written, and
    /// the length of hyper's buffer, reported as written once ours is out.
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<IO> JsonErrorIo<IO> {
    pub fn new(inner: IO) -> Self {
        Self {
            inner,
            replacing: None,
        }
    }
}

/// Our response for hyper's automatic response `head`, or `None` when `head` is not one.
///
/// hyper's is exactly a status line with a 4xx status, `connection: close`,
/// `content-length: 0` and `date` headers and the blank line, written in one buffer.
pub fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    if head.len() > 512 || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text[..text.len() - 4].split("\r\n");
    let status_line = lines.next()?;
    let status: u16 = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))?
        .get(..3)?
        .parse()
        .ok()?;
    if !(400..500).contains(&status) {
        return None;
    }
    let mut date = None;
    let (mut close, mut empty) = (false, false);
    for line in lines {
        let (name, value) = line.split_once(": ")?;
        match name {
            "connection" if value == "close" => close = true,
            "content-length" if value == "0" => empty = true,
            "date" => date = Some(value),
            _ => return None,
        }
    }
    if !(close && empty) {
        return None;
    }
    let message = match status {
        414 => {
            "The request line (method and URL) is longer than this server reads; shorten the URL"
        }
        431 => {
            "The request headers are larger than this server reads; send fewer or shorter headers"
        }
        _ => {
            "The request is not valid HTTP/1.1: a malformed request line or header, such as a \
             Content-Length that is not a decimal number below 2^64; fix the request"
        }
    };
    let request_id = crate::ids::new_id("req");
    tracing::info!(
        request_id = %request_id,
        status,
        "refused a request that could not be parsed"
    );
    let body = ErrorBody {
        error: ErrorObject {
            code: ErrorCode::ValidationError,
            message: message.to_string(),
            details: Vec::new(),
            children: None,
        },
        meta: Meta {
            request_id: request_id.clone(),
            timestamp: crate::timestamp::now(),
        },
    };
    let body = serde_json::to_vec(&body).ok()?;
    let mut out = format!(
        "{status_line}\r\ncontent-type: application/json\r\nx-request-id: {request_id}\r\n\
         connection: close\r\ncontent-length: {}\r\n",
        body.len()
    )
    .into_bytes();
    if let Some(date) = date {
        out.extend_from_slice(format!("date: {date}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body);
    Some(out)
}

impl<IO: AsyncWrite + Unpin> JsonErrorIo<IO> {
    /// Writes what is left of the replacement; `Ready(Ok(n))` with hyper's length once
    /// all of it is out.
    fn poll_replacing(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, written, claimed)) = &mut self.replacing {
            if *written == bytes.len() {
                let claimed = *claimed;
                self.replacing = None;
                return Poll::Ready(Ok(claimed));
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(0))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonErrorIo<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for JsonErrorIo<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacing.is_none() {
            match replacement(buf) {
                Some(ours) => this.replacing = Some((ours, 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        this.poll_replacing(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacing.is_none() {
            let mut non_empty = bufs.iter().filter(|b| !b.is_empty());
            let only = match (non_empty.next(), non_empty.next()) {
                (Some(one), None) => replacement(one).map(|ours| (ours, one.len())),
                _ => None,
            };
            match only {
                Some((ours, len)) => this.replacing = Some((ours, 0, len)),
                None => return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs),
            }
        }
        this.poll_replacing(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_automatic_response_is_replaced() {
        let hyper = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\ndate: Sun, 22 Nov 2026 23:50:39 GMT\r\n\r\n";
        let ours = String::from_utf8(replacement(hyper).unwrap()).unwrap();
        let (head, body) = ours.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "VALIDATION_ERROR");
        assert!(
            v["meta"]["request_id"]
                .as_str()
                .unwrap()
                .starts_with("req_")
        );
        assert!(head.contains(v["meta"]["request_id"].as_str().unwrap()));
        let long = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert!(replacement(long).is_some());
        for not in [
            &b"HTTP/1.1 400 Bad Request\r\nx-request-id: req_1\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: x\r\n\r\n",
            b"HTTP/1.1 500 Internal Server Error\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n{}",
        ] {
            assert!(replacement(not).is_none(), "{}", String::from_utf8_lossy(not));
        }
    }
}
