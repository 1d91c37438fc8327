//! The page's files, embedded at build time from `compiler/playground/`: nothing is
//! fetched at run time, so the page works offline.

use super::Reply;

const INDEX: &str = include_str!("../../playground/index.html");
const SCRIPT: &str = include_str!("../../playground/app.js");
const STYLE: &str = include_str!("../../playground/style.css");

/// The asset at `path`, if there is one.
pub fn get(path: &str) -> Option<Reply> {
    let (content_type, body) = match path {
        "/" | "/index.html" => ("text/html; charset=utf-8", INDEX),
        "/app.js" => ("text/javascript; charset=utf-8", SCRIPT),
        "/style.css" => ("text/css; charset=utf-8", STYLE),
        _ => return None,
    };
    Some(Reply {
        status: 200,
        content_type,
        body: body.as_bytes().to_vec(),
    })
}
