// A stand-in for the part of reqwest's API the Rust snippets use (reqwest itself cannot
// be fetched offline). It has reqwest's names and signatures, so rustc type-checks the
// snippets against it, and it sends the request as plain HTTP/1.1 over std::net, so the
// round-trip test sees the bytes the snippet's literals hold. It is not reqwest: it checks
// the snippet, not the library.
use std::fmt;

#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub struct Method(Vec<u8>);

impl Method {
    pub fn from_bytes(b: &[u8]) -> Result<Method, Error> {
        if b.is_empty() {
            return Err(Error("empty method".into()));
        }
        Ok(Method(b.to_vec()))
    }
}

pub mod header {
    use super::Error;

    pub struct HeaderName(pub(crate) Vec<u8>);
    pub struct HeaderValue(pub(crate) Vec<u8>);

    impl HeaderName {
        pub fn from_bytes(b: &[u8]) -> Result<HeaderName, Error> {
            if b.is_empty() || b.iter().any(|c| *c <= b' ' || *c == b':' || *c >= 0x7f) {
                return Err(Error("invalid header name".into()));
            }
            Ok(HeaderName(b.to_vec()))
        }
    }

    impl HeaderValue {
        pub fn from_bytes(b: &[u8]) -> Result<HeaderValue, Error> {
            if b.iter().any(|c| (*c < b' ' && *c != b'\t') || *c == 0x7f) {
                return Err(Error("invalid header value".into()));
            }
            Ok(HeaderValue(b.to_vec()))
        }
    }
}

pub mod redirect {
    pub struct Policy;

    impl Policy {
        pub fn none() -> Policy {
            Policy
        }
    }
}

pub struct Body(Vec<u8>);

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Body {
        Body(s.as_bytes().to_vec())
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Body {
        Body(v)
    }
}

pub mod blocking {
    use super::header::{HeaderName, HeaderValue};
    use super::{Body, Error, Method};
    use std::io::{Read, Write};

    pub struct Client;
    pub struct ClientBuilder;

    impl Client {
        pub fn builder() -> ClientBuilder {
            ClientBuilder
        }

        pub fn request(&self, method: Method, url: &str) -> RequestBuilder {
            RequestBuilder { method: method.0, url: url.to_string(), headers: Vec::new(), body: Vec::new() }
        }
    }

    impl ClientBuilder {
        pub fn redirect(self, _p: super::redirect::Policy) -> ClientBuilder {
            self
        }

        pub fn build(self) -> Result<Client, Error> {
            Ok(Client)
        }
    }

    pub struct RequestBuilder {
        method: Vec<u8>,
        url: String,
        headers: Vec<(Vec<u8>, Vec<u8>)>,
        body: Vec<u8>,
    }

    pub struct Response {
        status: u16,
        text: String,
    }

    impl Response {
        pub fn status(&self) -> u16 {
            self.status
        }

        pub fn text(self) -> Result<String, Error> {
            Ok(self.text)
        }
    }

    impl RequestBuilder {
        pub fn header(mut self, k: HeaderName, v: HeaderValue) -> RequestBuilder {
            self.headers.push((k.0, v.0));
            self
        }

        pub fn body<T: Into<Body>>(mut self, b: T) -> RequestBuilder {
            self.body = b.into().0;
            self
        }

        pub fn send(self) -> Result<Response, Error> {
            let rest = self.url.strip_prefix("http://").ok_or(Error("only http:// here".into()))?;
            let (auth, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            let mut s = std::net::TcpStream::connect(auth).map_err(|e| Error(e.to_string()))?;
            let mut req = Vec::new();
            req.extend_from_slice(&self.method);
            req.extend_from_slice(format!(" {} HTTP/1.1\r\nHost: {}\r\n", path, auth).as_bytes());
            for (k, v) in &self.headers {
                req.extend_from_slice(k);
                req.extend_from_slice(b": ");
                req.extend_from_slice(v);
                req.extend_from_slice(b"\r\n");
            }
            if !self.body.is_empty() {
                req.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
            }
            req.extend_from_slice(b"Connection: close\r\n\r\n");
            req.extend_from_slice(&self.body);
            s.write_all(&req).map_err(|e| Error(e.to_string()))?;
            let mut out = Vec::new();
            s.read_to_end(&mut out).map_err(|e| Error(e.to_string()))?;
            let text = String::from_utf8_lossy(&out).to_string();
            let status = text.get(9..12).and_then(|c| c.parse().ok()).ok_or(Error("bad response".into()))?;
            Ok(Response { status, text })
        }
    }
}
