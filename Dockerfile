# The batonflow server image used by compose.yaml: every extra, the `batonflow` command.
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir '.[all]'
ENV BATONFLOW_HOST=0.0.0.0 BATONFLOW_PORT=8000
EXPOSE 8000
ENTRYPOINT ["batonflow"]
CMD ["serve"]
