//! A macro for the small closed enums of the IR (condition codes, address spaces, ...).
//!
//! Each such enum is declared once, with each variant's text-format spelling and its
//! documentation; the macro derives `ALL`, `name()`, `Display` and `FromStr` from that one
//! list, so the parser and the printer can never disagree on a spelling.

/// Declares a `Copy` enum whose variants each have a text-format name.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in order of declaration.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];

            /// The spelling of this variant in the text format.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl core::str::FromStr for $name {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(()),
                }
            }
        }
    };
}

pub(crate) use named_enum;
