"""HTML views, one module per page or concern; ``audit/urls.py`` names them."""
