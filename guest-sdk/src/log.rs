//! Messages for the person running the agent: the host writes them to its stderr,
//! prefixed with the guardrail's name.

use crate::imports::log::{Level, log};

pub fn debug(message: &str) {
    log(Level::Debug, message);
}

pub fn info(message: &str) {
    log(Level::Info, message);
}

pub fn warn(message: &str) {
    log(Level::Warn, message);
}

pub fn error(message: &str) {
    log(Level::Error, message);
}
