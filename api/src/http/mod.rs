//! HTTP plumbing shared by every resource: the response envelope, extractors whose
//! rejections are our VALIDATION_ERROR shape, and the request-scoped middlewares.

pub mod envelope;
pub mod exact_numbers;
pub mod extract;
pub mod middleware;
pub mod raw_errors;
pub mod stack;

/// The client's address as the listener saw it (for sign-in rate limits); set by
/// `app::Server::run` through axum's connect info.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub std::net::SocketAddr);

impl
    axum::extract::connect_info::Connected<
        axum::serve::IncomingStream<'_, raw_errors::JsonErrorListener>,
    > for PeerAddr
{
    fn connect_info(
        stream: axum::serve::IncomingStream<'_, raw_errors::JsonErrorListener>,
    ) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}
