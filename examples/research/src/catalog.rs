escepine_contract::include_tools!();
