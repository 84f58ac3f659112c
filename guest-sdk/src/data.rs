//! Read-only files this guardrail's entry grants it (`data = [...]`), read by the
//! host when asked for.

use crate::imports::data as wit;

pub use wit::DataError;

impl DataError {
    /// A sentence saying why the file could not be read.
    pub fn message(&self) -> String {
        match self {
            DataError::NotGranted(path) => {
                format!("this guardrail's entry does not grant '{path}' (add it to `data`)")
            }
            DataError::Unreadable(why) => why.clone(),
        }
    }
}

impl From<DataError> for crate::Error {
    fn from(e: DataError) -> Self {
        crate::Error::msg(format!("data: {}", e.message()))
    }
}

/// The contents of a granted file, named as the entry names it.
pub fn read(path: &str) -> Result<String, DataError> {
    wit::read(path)
}
