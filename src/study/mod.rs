//! Human studies: blind adjudication sheets exported for a person, imported back as
//! adjudication records that analyses apply over automatic matching, and the CSV they use.

pub mod adjudication;
pub mod findings;
pub mod sheet;
