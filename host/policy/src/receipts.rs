//! What the config says about receipts: whether refusals stand ([`Gate`]) and
//! the OpenTelemetry collector they are copied to ([`otlp::Endpoint`]). Writing
//! and sending them is the engine's.

use serde::{Deserialize, Serialize};

/// Whether refusals stand or are only recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    /// Refusals refuse.
    #[default]
    Enforce,
    /// Decide and record, never refuse: what would have been refused goes to
    /// stderr and the receipt, and the event proceeds.
    Observe,
}

impl Gate {
    /// As the config writes it.
    pub fn name(self) -> &'static str {
        match self {
            Gate::Enforce => "enforce",
            Gate::Observe => "observe",
        }
    }
}

pub mod otlp {
    //! The collector's address, as `[receipts] otlp` names it.

    /// Where a collector takes logs: `[receipts] otlp`, checked.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct Endpoint {
        /// `host:port`, as connected to and sent in `Host`.
        pub authority: String,
        /// The path logs are POSTed to (`/v1/logs` unless the URL names one).
        pub path: String,
    }

    impl Endpoint {
        /// An `http://host[:port][/path]` URL. A bare URL (or one whose path does not
        /// end in `/v1/logs`) gets `/v1/logs` added, as OpenTelemetry's
        /// `OTEL_EXPORTER_OTLP_ENDPOINT` does.
        pub fn parse(url: &str) -> Result<Endpoint, String> {
            let uri: http::Uri = url
                .parse()
                .map_err(|e| format!("`{url}` is not a URL ({e}); write http://collector:4318"))?;
            match uri.scheme_str() {
                Some("http") => {}
                Some("https") => {
                    return Err(format!(
                        "`{url}`: only http:// is spoken; put a TLS-terminating proxy (or a collector on this machine) in front of an https collector"
                    ));
                }
                _ => return Err(format!("`{url}` is not an http:// URL")),
            }
            let authority = uri
                .authority()
                .ok_or_else(|| format!("`{url}` names no host"))?;
            if authority.as_str().contains('@') {
                return Err(format!("`{url}`: credentials in the URL are not sent"));
            }
            let port = authority.port_u16().unwrap_or(80);
            let authority = format!("{}:{port}", authority.host());
            let path = uri.path().trim_end_matches('/');
            let path = if path.ends_with("/v1/logs") {
                path.to_owned()
            } else {
                format!("{path}/v1/logs")
            };
            Ok(Endpoint { authority, path })
        }

        pub fn url(&self) -> String {
            format!("http://{}{}", self.authority, self.path)
        }
    }
}
