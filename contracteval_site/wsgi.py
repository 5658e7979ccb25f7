import os

from contracteval_site.startup import pause_collector

pause_collector()  # resumed when the apps are ready; see contracteval_site/startup.py

from django.core.wsgi import get_wsgi_application  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")
application = get_wsgi_application()
