//! The project OpenCode 1.18.33 binds a directory's sessions to (it lists a session only under
//! its `project_id`), found as OpenCode finds it:
//! 1. outside a git checkout: `global`;
//! 2. a checkout with an `origin` remote: the SHA-1 of `git-remote:<host>/<path>`;
//! 3. else the id cached in `<git common dir>/opencode`;
//! 4. else the first root commit of HEAD.

use std::path::Path;

use crate::git::output as git;

pub struct Project {
    pub id: String,
    /// The checkout's top folder (`/` for `global`).
    pub worktree: String,
    pub vcs: Option<&'static str>,
}

impl Project {
    /// A session's `path`: its directory relative to the worktree, as OpenCode records it.
    pub fn path_of(&self, dir: &str) -> String {
        let rest = dir.strip_prefix(&self.worktree).unwrap_or(dir);
        rest.trim_start_matches('/').to_string()
    }
}

pub fn of_dir(dir: &str) -> Project {
    let global = Project {
        id: "global".into(),
        worktree: "/".into(),
        vcs: None,
    };
    let Some(top) = git(Path::new(dir), &["rev-parse", "--show-toplevel"]) else {
        return global;
    };
    let top_path = Path::new(&top);
    let common = git(top_path, &["rev-parse", "--git-common-dir"]).map(|c| top_path.join(c));
    let from_remote = git(top_path, &["remote", "get-url", "origin"])
        .and_then(|url| remote_key(&url))
        .map(|key| sha1_hex(format!("git-remote:{key}").as_bytes()));
    let cached = || {
        let text = std::fs::read_to_string(common.as_ref()?.join("opencode")).ok()?;
        Some(text.trim().to_string()).filter(|t| !t.is_empty())
    };
    let root = || {
        let roots = git(top_path, &["rev-list", "--max-parents=0", "HEAD"])?;
        let mut roots: Vec<&str> = roots.lines().map(str::trim).collect();
        roots.sort();
        roots.first().map(|r| r.to_string())
    };
    Project {
        id: from_remote
            .or_else(cached)
            .or_else(root)
            .unwrap_or_else(|| "global".into()),
        worktree: top,
        vcs: Some("git"),
    }
}

/// `<host>/<path>` of a remote URL as OpenCode keys it (host lowercased; path without leading
/// `/`, trailing `.git` or `/`), for a URL or an scp-like `user@host:path`; `None` for a
/// `file:` URL or anything else.
pub fn remote_key(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = match url.split_once("://") {
        Some((scheme, rest)) => {
            if scheme.eq_ignore_ascii_case("file") {
                return None;
            }
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority.rsplit('@').next()?;
            let host = host.split(':').next()?;
            (host.to_string(), format!("/{path}"))
        }
        None => {
            let (before, path) = url.split_once(':')?;
            let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
            if host.is_empty() || host.contains('/') || path.is_empty() {
                return None;
            }
            (host.to_string(), path.to_string())
        }
    };
    let path = path.trim_start_matches('/');
    let path = path
        .strip_suffix(".git/")
        .or_else(|| path.strip_suffix(".git"))
        .unwrap_or(path);
    let path = path.trim_end_matches('/');
    (!host.is_empty() && !path.is_empty()).then(|| format!("{}/{path}", host.to_lowercase()))
}

/// SHA-1 of `data` in hex, the hash OpenCode names remote-keyed projects by.
pub fn sha1_hex(data: &[u8]) -> String {
    use sha1::Digest;
    crate::text::hex(&sha1::Sha1::digest(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_is_the_standard_one() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        let long = "a".repeat(1000);
        assert_eq!(
            sha1_hex(long.as_bytes()),
            "291e9a6c66994949b57ba5e650361e98fc36b1ba"
        );
    }

    /// The id OpenCode 1.18.33 gave a checkout whose origin is
    /// `https://github.com/example/demo.git` (formats note, verified), and the spellings of
    /// that remote it takes alike.
    #[test]
    fn remote_projects_are_keyed_as_opencode_keys_them() {
        for url in [
            "https://github.com/example/demo.git",
            "git@github.com:example/demo.git",
            "ssh://git@GitHub.com/example/demo/",
        ] {
            assert_eq!(
                remote_key(url).as_deref(),
                Some("github.com/example/demo"),
                "{url}"
            );
        }
        let id = sha1_hex(b"git-remote:github.com/example/demo");
        assert!(id.starts_with("1acf5bf3"), "{id}");
        assert_eq!(remote_key("file:///srv/demo.git"), None);
    }

    #[test]
    fn paths_are_relative_to_the_worktree() {
        let p = Project {
            id: "x".into(),
            worktree: "/home/dev/p".into(),
            vcs: Some("git"),
        };
        assert_eq!(p.path_of("/home/dev/p"), "");
        assert_eq!(p.path_of("/home/dev/p/src/a"), "src/a");
        let g = Project {
            id: "global".into(),
            worktree: "/".into(),
            vcs: None,
        };
        assert_eq!(g.path_of("/home/dev/nogit"), "home/dev/nogit");
    }
}
